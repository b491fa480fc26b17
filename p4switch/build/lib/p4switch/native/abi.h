#include <stdint.h>
#define P4S_MAX_OUT 64            /* frames one input may produce */
#define P4S_FRAME_MAX 9216        /* bytes per emitted frame */
typedef struct {
    uint32_t n;                           /* frames emitted */
    uint32_t port[P4S_MAX_OUT];           /* egress port of each */
    uint32_t len[P4S_MAX_OUT];            /* length of each */
    uint8_t  data[P4S_MAX_OUT][P4S_FRAME_MAX];
} p4s_out;
/* Run one frame received on `ingress_port` (also the CPU port for packet-out).
   Fills `out` (out->n = 0: dropped). Thread-safe: takes the pipeline's own mutex.
   Returns 0, or -1 on an internal error (frame dropped, counted inside). */
typedef int (*p4s_process_fn)(void *ctx, uint32_t ingress_port,
                              const uint8_t *data, uint32_t len, p4s_out *out);
