# Writes the seed_* files of this folder, FuzzDecode's seeds of the formats
# torchvision's ImageFolder lists beside JPEG (WebP, TIFF, BMP, PNM, GIF,
# 16-bit PNG), small, from a real photograph, with PIL. The outputs are
# committed; tests never run this. Usage: python3 seeds.py (in this folder).
from PIL import Image
import numpy as np
im = Image.open('/usr/share/backgrounds/mate/nature/Aqua.jpg').convert('RGB').resize((17, 13), Image.BILINEAR)
a = im.copy(); a.putalpha(128)
im.save('seed_lossy.webp', quality=70)
a.save('seed_lossless_alpha.webp', lossless=True)
im.save('seed_lzw.tif', compression='tiff_lzw')
im.convert('P').save('seed_pal.bmp')
im.save('seed.ppm')
g = np.asarray(im.convert('L'))
open('seed_ascii.pgm', 'wb').write(b'P2\n# c\n17 13\n300\n' + b' '.join(b'%d' % v for v in g.reshape(-1)) + b'\n')
open('seed.pbm', 'wb').write(b'P4 17 13\n' + bytes(range(3 * 13)))
im.quantize(16).save('seed.gif', transparency=2)
Image.fromarray((g.astype(np.uint16) * 300)).save('seed_gray16.png')
im.save('seed_anim.webp', save_all=True, append_images=[im.rotate(180)], quality=60)
