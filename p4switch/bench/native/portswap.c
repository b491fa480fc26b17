/* The least a pipeline can do, behind the calling convention of src/p4switch/native/abi.h: a
 * frame in on port 1 leaves on port 2 and the other way round, anything else is dropped. Run in the
 * native I/O loop it measures that loop's batched I/O alone, the limit of the veth path for a
 * switch built the way p4switch's native path is. */
#include <string.h>

#include "abi.h"

int portswap_process(void *ctx, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                     p4s_out *out)
{
    (void)ctx;
    out->n = 0;
    if ((ingress_port != 1 && ingress_port != 2) || len > P4S_FRAME_MAX)
        return 0;
    out->port[0] = 3 - ingress_port;
    out->len[0] = len;
    memcpy(out->data[0], data, len);
    out->n = 1;
    return 0;
}
