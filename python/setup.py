"""The wheel carries a native binary (faster/_bin/faster, put there by
scripts/wheel.sh), so it is tagged for this platform, not py3-none-any."""
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
