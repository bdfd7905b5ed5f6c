"""The wheel carries a native binary (faster/_bin/faster, put into a staged
copy of this folder by scripts/wheel.sh) and no Python extension: it runs on
any CPython 3, so it is tagged py3-none-PLATFORM, PLATFORM being the
manylinux tag of the glibc the binary needs (FASTER_WHEEL_PLATFORM, which
scripts/wheel.sh reads off the binary), else this machine's platform."""
import os

from setuptools import setup
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 has its own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Any Python 3, no ABI, the binary's platform."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", os.environ.get("FASTER_WHEEL_PLATFORM") or plat


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
