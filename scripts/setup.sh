#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian/Ubuntu
# machine, only when it is missing: Debian packages (apt) and the npm
# package used as the independent TFRecord implementation in interop tests.
# Idempotent: a second run does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: name -> a file it installs (checked instead of dpkg so
# that a library installed by other means counts too).
declare -A need=(
  [dataset-fashion-mnist]=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
  [libjpeg62-turbo-dev]=/usr/include/jpeglib.h
  [gcc]=/usr/bin/gcc
  [python3]=/usr/bin/python3
  [nodejs]=/usr/bin/node
  [npm]=/usr/bin/npm
  [python3-opencv]=/usr/lib/python3/dist-packages/cv2.cpython-311-x86_64-linux-gnu.so
  [python3-pil]=/usr/lib/python3/dist-packages/PIL/Image.py
  [python3-torchvision]=/usr/lib/python3/dist-packages/torchvision/__init__.py
  [mate-backgrounds]=/usr/share/backgrounds/mate/nature/LadyBird.jpg
  # source/loader: Caffe LMDB fixtures written at test time by Python's lmdb.
  [python3-lmdb]=/usr/lib/python3/dist-packages/lmdb/__init__.py
  # imgcodec: djpeg (decode peer, testdata/gen.sh) and TurboJPEG (the
  # in-process peer of BenchmarkDecode). mate-backgrounds above also
  # holds imgcodec's test photographs.
  [libjpeg-turbo-progs]=/usr/bin/djpeg
  [libturbojpeg0-dev]=/usr/include/turbojpeg.h
  # train/onednn: oneDNN (the training engine's cgo backend) and
  # python3-torch for the PyTorch peer benchmark and the testdata
  # generator of train/traintest.
  [libdnnl-dev]=/usr/include/dnnl.h
  [libgloo-dev]=/usr/include/gloo/allreduce.h
  [python3-torch]=/usr/lib/python3/dist-packages/torch/__init__.py
  # serve: the Python client (python/faster) and its tests need numpy;
  # torch (above) for its tensors and examples/ddp_thinnet.py.
  [python3-numpy]=/usr/lib/python3/dist-packages/numpy/__init__.py
  # make wheel (scripts/wheel.sh) and its test: build the wheel without a
  # package index and install it into a fresh venv.
  [python3-pip]=/usr/lib/python3/dist-packages/pip/__init__.py
  [python3-setuptools]=/usr/lib/python3/dist-packages/setuptools/__init__.py
  [python3-wheel]=/usr/lib/python3/dist-packages/wheel/__init__.py
  [python3-venv]=/usr/lib/python3.11/ensurepip/__init__.py
  # Ranks under the real engines (issue 30): mpirun (Open MPI) and a
  # one-host Slurm cluster (slurmctld + slurmd, authenticated by munge).
  [openmpi-bin]=/usr/bin/mpirun
  [slurm-wlm]=/usr/sbin/slurmd
  [munge]=/usr/sbin/munged
  # train/cuda: a real NVRTC compiles the GPU kernels (kernels.cu,
  # resize.cu) on every test run; it needs no GPU. Debian's non-free.
  [libnvrtc11.2]=/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2
  [libnvrtc-builtins11.8]=/usr/lib/x86_64-linux-gnu/libnvrtc-builtins.so.11.8
)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

# nonfree makes Debian's non-free packages known (libnvrtc, libcuda1),
# adding the components to Debian's own archive (the same mirror and
# suites as its main sources) when apt does not know them yet.
nonfree() {
  apt-cache show libnvrtc11.2 >/dev/null 2>&1 && return 0
  $sudo apt-get update >/dev/null
  apt-cache show libnvrtc11.2 >/dev/null 2>&1 && return 0
  local uri suite
  uri=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${uri:-http://deb.debian.org/debian}" "$suite" "$suite" | $sudo tee /etc/apt/sources.list.d/faster-nonfree.sources >/dev/null
  $sudo apt-get update >/dev/null
}

missing=()
for pkg in "${!need[@]}"; do
  [ -e "${need[$pkg]}" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  [[ " ${missing[*]} " != *" libnvrtc"* ]] || nonfree
  if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    $sudo apt-get update >/dev/null
    $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# train/cuda, gpudecode/nvjpeg: real CUDA libraries from Debian's
# non-free packages, unpacked where no search finds them, not installed
# (libcuda1 would divert the machine's OpenGL): the driver (libcuda1),
# nvJPEG and the runtime. The tests read their exports and open the
# driver in a child process; without a GPU its cuInit fails, as they
# expect (internal/testenv.CUDALibDir).
cudalibs=/usr/local/lib/faster-test-cuda
if [ ! -e "$cudalibs/libcuda.so.1" ] || [ ! -e "$cudalibs/libnvjpeg.so.11" ] || [ ! -e "$cudalibs/libcudart.so.11.0" ]; then
  echo "setup: unpacking Debian's libcuda1, libnvjpeg11, libcudart11.0 into $cudalibs" >&2
  nonfree
  tmp=$(mktemp -d)
  chmod 755 "$tmp"
  (cd "$tmp" && $sudo apt-get download libcuda1 libnvjpeg11 libcudart11.0 >/dev/null 2>&1)
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done
  lib="$tmp/x/usr/lib/x86_64-linux-gnu"
  $sudo mkdir -p "$cudalibs"
  $sudo cp "$(ls "$lib"/nvidia/current/libcuda.so.*.* | head -1)" "$cudalibs/libcuda.so.1"
  $sudo cp "$(ls "$lib"/libnvjpeg.so.11.* | head -1)" "$cudalibs/libnvjpeg.so.11"
  $sudo cp "$(ls "$lib"/libcudart.so.11.* | head -1)" "$cudalibs/libcudart.so.11.0"
  rm -rf "$tmp"
fi

# The independent TFRecord implementation (pure JavaScript) for the
# interop tests, pinned by the committed package-lock.json.
interop=tfrecord/testdata/interop
if [ ! -d "$interop/node_modules/@roboflow/tfrecords" ]; then
  echo "setup: installing npm packages in $interop" >&2
  (cd "$interop" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
