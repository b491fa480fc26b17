/* Frames back to back through a native pipeline's p4s_process, no Python in between: what the
 * pipeline alone costs, the ceiling of any I/O loop around it. Built as a shared library by
 * bench/native_build.py and called once per measurement through ctypes. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "abi.h"

/* Run `total` frames, cycling over the `n` given (frame k: `lens[k]` bytes at
 * frames + k * stride, received on ports[k]); the seconds taken, and the frames emitted in
 * *emitted (-1 seconds when no output buffer could be had). */
double p4s_bench_loop(p4s_process_fn process, void *ctx, const uint8_t *frames,
                      const uint32_t *lens, const uint32_t *ports, uint32_t stride, uint32_t n,
                      uint64_t total, uint64_t *emitted)
{
    p4s_out *out = malloc(sizeof *out);
    if (out == NULL || n == 0)
        return -1.0;
    struct timespec start, end;
    uint64_t sent = 0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (uint64_t i = 0; i < total; i++) {
        uint32_t k = (uint32_t)(i % n);
        process(ctx, ports[k], frames + (size_t)k * stride, lens[k], out);
        sent += out->n;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    free(out);
    *emitted = sent;
    return (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
}
