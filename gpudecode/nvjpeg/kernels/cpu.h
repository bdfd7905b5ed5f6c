/* cpu.h: the launchers of cpu.c (resize.cu built for the CPU). */
#include <stdint.h>

/* nvj_cpu_set_reverse: launches after it in reverse order (r != 0) or
 * not; the setting before. Not while a launch runs. */
int nvj_cpu_set_reverse(int r);
void nvj_cpu_resize_h(int gx, int gy, int b, const uint8_t *src, uint8_t *tmp, const int32_t *tab, const int64_t *desc, int32_t outw, int32_t ch);
void nvj_cpu_resize_v_u8(int gx, int gy, int b, const uint8_t *tmp, uint8_t *dst, const int32_t *tab, const int64_t *desc, int32_t outw, int32_t outh, int32_t ch);
void nvj_cpu_resize_v_f32(int gx, int gy, int b, const uint8_t *tmp, float *dst, const int32_t *tab, const int64_t *desc, const float *lut, int32_t outw, int32_t outh, int32_t ch);
