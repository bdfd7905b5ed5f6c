/* mkcmyk: reads a binary PPM (P6) on stdin and writes an Adobe CMYK (or,
 * with argument "ycck", YCCK) JPEG on stdout, storing the channels
 * inverted as Photoshop does (255 = no ink). Used by gen.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

int main(int argc, char **argv) {
	int w, h, maxv, x, y;
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned char *rgb, *row;
	if (scanf("P6 %d %d %d", &w, &h, &maxv) != 3 || maxv != 255) return 1;
	getchar();
	rgb = malloc((size_t)w * h * 3);
	row = malloc((size_t)w * 4);
	if (fread(rgb, 3, (size_t)w * h, stdin) != (size_t)w * h) return 1;
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, stdout);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 4;
	c.in_color_space = JCS_CMYK;
	jpeg_set_defaults(&c);
	jpeg_set_colorspace(&c, argc > 1 && strcmp(argv[1], "ycck") == 0 ? JCS_YCCK : JCS_CMYK);
	jpeg_set_quality(&c, 90, TRUE);
	jpeg_start_compress(&c, TRUE);
	for (y = 0; y < h; y++) {
		for (x = 0; x < w; x++) {
			unsigned char *p = rgb + ((size_t)y * w + x) * 3;
			int k = 255 - (p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]));
			int cc = k == 255 ? 0 : (255 - p[0] - k) * 255 / (255 - k);
			int m = k == 255 ? 0 : (255 - p[1] - k) * 255 / (255 - k);
			int yy = k == 255 ? 0 : (255 - p[2] - k) * 255 / (255 - k);
			row[4*x] = 255 - cc; row[4*x+1] = 255 - m; row[4*x+2] = 255 - yy; row[4*x+3] = 255 - k;
		}
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return 0;
}
