# Writes every image format torchvision's ImageFolder lists, made from real
# photographs with PIL (and by hand where PIL writes no such file: the
# ASCII PNM formats, maxval other than 255 or 65535, 16-bit RGB PNG), and
# beside each NAME its pixels as PIL's Image.open(NAME).convert("RGB") gives
# them (ImageFolder's loader): NAME.rgb, "W H\n" then the HWC bytes.
# Usage: python3 pilformats.py OUTDIR PHOTO...
import os, struct, sys, zlib
import numpy as np
from PIL import Image

out = sys.argv[1]
photos = sys.argv[2:]
files = []


def save(im, name, **kw):
    p = os.path.join(out, name)
    im.save(p, **kw)
    files.append(p)


def raw(name, data):
    p = os.path.join(out, name)
    with open(p, "wb") as f:
        f.write(data)
    files.append(p)


def pnm_plain(magic, w, h, maxval, values, per_line=17):
    head = b"%s\n# a comment\n%d %d\n" % (magic, w, h)
    if maxval is not None:
        head += b"%d\n" % maxval
    toks = [b"%d" % v for v in values.reshape(-1)]
    lines = [b" ".join(toks[i:i + per_line]) for i in range(0, len(toks), per_line)]
    return head + b"\n".join(lines) + b"\n"


def png16(arr, color, trns=b""):
    h, w = arr.shape[:2]
    rows = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, color, 0, 0, 0)) +
            (chunk(b"tRNS", trns) if trns else b"") + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


for n, p in enumerate(photos):
    size = [(257, 191), (160, 121), (64, 47)][n % 3]
    with Image.open(p) as src:
        rgb = src.convert("RGB").resize(size, Image.BILINEAR)
    w, h = rgb.size
    a = np.asarray(rgb)
    alpha = Image.fromarray((np.add.outer(np.arange(h), np.arange(w)) * 255 // (w + h)).astype(np.uint8))
    rgba = rgb.copy()
    rgba.putalpha(alpha)
    gray = rgb.convert("L")
    pal = rgb.quantize(colors=200)
    b = "p%d" % n
    # WebP: lossy (libwebp's fancy upsampling), lossy with alpha, lossless.
    save(rgb, b + "_lossy.webp", quality=80)
    save(rgba, b + "_lossy_alpha.webp", quality=60)
    save(rgb, b + "_lossless.webp", lossless=True)
    save(rgba, b + "_lossless_alpha.webp", lossless=True)
    # Animated: PIL gives the first frame.
    second = rgb.transpose(Image.FLIP_LEFT_RIGHT)
    save(rgb, b + "_anim_lossy.webp", save_all=True, append_images=[second], quality=70, duration=100)
    save(rgba, b + "_anim_lossless.webp", save_all=True, append_images=[second.convert("RGBA")], lossless=True)
    # ... its first frame at an offset on a larger canvas (black around).
    save(rgb, b + "_anim_offset.webp", save_all=True, append_images=[second], quality=70)
    with open(files[-1], "rb") as f:
        d = bytearray(f.read())
    d[24:27] = (w - 1 + 6).to_bytes(3, "little")
    d[27:30] = (h - 1 + 4).to_bytes(3, "little")
    at = d.index(b"ANMF") + 8
    d[at:at + 3] = (2).to_bytes(3, "little")
    d[at + 3:at + 6] = (1).to_bytes(3, "little")
    with open(files[-1], "wb") as f:
        f.write(bytes(d))
    # BMP: 24-bit, 8-bit gray and palette, 1-bit, 32-bit.
    save(rgb, b + ".bmp")
    save(gray, b + "_gray.bmp")
    save(pal, b + "_pal.bmp")
    save(gray.convert("1"), b + "_bw.bmp")
    save(rgba, b + "_rgba.bmp")
    # TIFF: each compression, gray, palette, RGBA, 16-bit gray.
    save(rgb, b + ".tif")
    save(rgb, b + "_lzw.tiff", compression="tiff_lzw")
    save(rgb, b + "_deflate.tiff", compression="tiff_adobe_deflate")
    save(rgb, b + "_packbits.tif", compression="packbits")
    save(gray, b + "_gray.tif")
    save(pal, b + "_pal.tif")
    save(rgba, b + "_rgba.tif")
    save(Image.fromarray((a[:, :, 1].astype(np.uint16) * 3 // 2)), b + "_gray16.tif")
    # PNM, binary as PIL writes it, ASCII and other maxvals by hand.
    save(rgb, b + ".ppm")
    save(gray, b + ".pgm")
    save(gray.convert("1"), b + ".pbm")
    g = np.asarray(gray)
    raw(b + "_ascii.ppm", pnm_plain(b"P3", w, h, 255, a))
    raw(b + "_ascii.pgm", pnm_plain(b"P2", w, h, 255, g))
    raw(b + "_ascii.pbm", pnm_plain(b"P1", w, h, None, (g < 128).astype(np.uint8)))
    raw(b + "_ascii15.ppm", pnm_plain(b"P3", w, h, 15, a // 17))
    raw(b + "_ascii300.pgm", pnm_plain(b"P2", w, h, 300, np.minimum(g.astype(np.int64) * 300 // 255 + 40 * (g > 230), 300)))
    raw(b + "_max100.pgm", b"P5 %d %d 100\n" % (w, h) + (g.astype(np.int64) * 100 // 255).astype(np.uint8).tobytes())
    raw(b + "_max1000.ppm", b"P6\n%d %d\n1000\n" % (w, h) + (a.astype(np.int64) * 1000 // 255).astype(">u2").tobytes())
    raw(b + "_max65535.pgm", b"P5\n%d\t%d\n65535\n" % (w, h) + (g.astype(np.int64) * 257 // 200).astype(">u2").tobytes())
    raw(b + "_max4095.pgm", b"P5\n%d %d\n4095\n" % (w, h) + (g.astype(np.int64) * 3).astype(">u2").tobytes())
    # GIF (first frame as PIL converts it), with a transparent index, and gray.
    save(pal, b + ".gif")
    pt = pal.copy()
    pt.info["transparency"] = 7
    save(pt, b + "_transparent.gif", transparency=7)
    save(gray, b + "_gray.gif")
    # A first frame smaller than the logical screen, at an offset, with and
    # without a transparent index (PIL fills the rest with that index, or 0).
    for suffix, kw in (("_offset.gif", {}), ("_offset_transparent.gif", {"transparency": 9})):
        save(pal.crop((0, 0, w - 7, h - 5)), b + suffix, **kw)
        p = files[-1]
        with open(p, "rb") as f:
            d = bytearray(f.read())
        d[6:10] = struct.pack("<HH", w, h)
        at = d.index(b"\x2c", 13 + (3 << ((d[10] & 7) + 1)))
        d[at + 1:at + 5] = struct.pack("<HH", 4, 3)
        with open(p, "wb") as f:
            f.write(bytes(d))
    # PNG: 16-bit gray (PIL mode I: convert clips), 16-bit RGB (high byte),
    # palette with tRNS, RGBA, gray with alpha.
    save(Image.fromarray((a[:, :, 0].astype(np.uint16) * 200 // 255)), b + "_gray16_low.png")
    save(Image.fromarray((a[:, :, 0].astype(np.uint16) * 257)), b + "_gray16.png")
    raw(b + "_rgb16.png", png16((a.astype(np.uint16) * 257 + 128 * (a > 2)), 2))
    # 16-bit with transparency: gray with a tRNS value (PIL: mode I, the
    # transparency ignored, clipped), gray+alpha and RGBA with transparent
    # pixels (PIL: the high byte of the straight colour, alpha dropped).
    g16 = a[:, :, 1].astype(np.uint16) * 2
    raw(b + "_gray16_trns.png", png16(g16, 0, struct.pack(">H", int(g16[0, 0]))))
    al = (np.asarray(alpha).astype(np.uint16) * 257) * (np.asarray(alpha) > 40)
    raw(b + "_la16.png", png16(np.dstack([a[:, :, 0].astype(np.uint16) * 257 + 3, al]), 4))
    raw(b + "_rgba16.png", png16(np.dstack([a.astype(np.uint16) * 257, al]), 6))
    save(pal, b + "_trns.png", transparency=3)
    save(rgba, b + "_rgba.png")
    save(gray.convert("LA"), b + "_la.png")

for p in files:
    with Image.open(p) as im:
        c = im.convert("RGB")
    with open(p + ".rgb", "wb") as f:
        f.write(b"%d %d\n" % c.size + np.asarray(c, dtype=np.uint8).tobytes())
print(len(files))
