#!/usr/bin/env bash
# Regenerates the golden JPEGs of this folder from a real photograph of
# Debian's mate-backgrounds (scripts/setup.sh installs it) with
# libjpeg-turbo's cjpeg/djpeg (libjpeg-turbo-progs) and mkcmyk.c. The
# outputs are committed; tests never run this.
set -euo pipefail
cd "$(dirname "$0")"
src=/usr/share/backgrounds/mate/nature/LadyBird.jpg
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
djpeg -scale 1/6 -crop 317x203+0+0 -ppm "$src" > "$tmp/base.ppm"   # 317x203: odd sizes
djpeg -scale 1/8 -crop 13x11+100+50 -ppm "$src" > "$tmp/tiny.ppm"
djpeg -scale 1/8 -crop 96x64+0+0 -ppm "$src" > "$tmp/small.ppm"
q=85
cjpeg -quality $q "$tmp/base.ppm" > ycc420.jpg
cjpeg -quality $q -sample 1x1 "$tmp/base.ppm" > ycc444.jpg
cjpeg -quality $q -sample 2x1 "$tmp/base.ppm" > ycc422.jpg
cjpeg -quality $q -sample 1x2 "$tmp/base.ppm" > ycc440.jpg
cjpeg -quality $q -sample 4x1 "$tmp/base.ppm" > ycc411.jpg
cjpeg -quality $q -progressive "$tmp/base.ppm" > progressive.jpg
cjpeg -quality $q -grayscale "$tmp/base.ppm" > gray.jpg
cjpeg -quality $q -grayscale -progressive "$tmp/base.ppm" > gray_progressive.jpg
cjpeg -quality $q -rgb "$tmp/base.ppm" > rgb.jpg
cjpeg -quality $q -restart 2 "$tmp/base.ppm" > restart.jpg
cjpeg -quality $q -arithmetic "$tmp/base.ppm" > arithmetic.jpg
# Sequential (SOF0) in three scans, one component each: non-interleaved.
printf '0;\n1;\n2;\n' > "$tmp/seq.scans"
jpegtran -scans "$tmp/seq.scans" ycc420.jpg > multiscan.jpg
cjpeg -quality $q "$tmp/tiny.ppm" > tiny.jpg
gcc -O2 -o "$tmp/mkcmyk" mkcmyk.c -ljpeg
"$tmp/mkcmyk" < "$tmp/base.ppm" > cmyk.jpg
"$tmp/mkcmyk" ycck < "$tmp/base.ppm" > ycck.jpg
# A PNG named .JPEG, as found in real datasets (ImageNet has some).
python3 - "$tmp/small.ppm" png_named.JPEG <<'PY'
import sys, zlib, struct
d = open(sys.argv[1], 'rb').read()
parts = d.split(maxsplit=4)
w, h, px = int(parts[1]), int(parts[2]), parts[4]
raw = b''.join(b'\x00' + px[y*w*3:(y+1)*w*3] for y in range(h))
def chunk(t, b): return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b'')
open(sys.argv[2], 'wb').write(png)
PY
