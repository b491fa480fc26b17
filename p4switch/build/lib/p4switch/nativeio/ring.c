/* A packet socket's receive ring (PACKET_MMAP, TPACKET_V2): the kernel writes each frame into a
 * slot of memory shared with the loop, which reads it in place and hands the slot back, with
 * no system call and no copy per frame. Frames longer than a slot are also queued on the socket
 * whole (PACKET_COPY_THRESH); their slot says so (TP_STATUS_COPY) and the loop reads them from
 * the socket in their turn. A socket that cannot have a ring (not a packet socket, a ring set
 * up already) is read with recvmmsg instead.
 */
#define _GNU_SOURCE
#include "nio.h"

#include <linux/if_packet.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#define NIO_RING_FRAME 2048        /* bytes per slot: header, address and up to 1982 of frame */
#define NIO_RING_BLOCK (1u << 20)  /* bytes per block of slots */
#define NIO_RING_BLOCKS 16         /* 16 MiB, 8192 slots per port: some 15 ms of small frames */

int nio_ring_open(nio_ring *ring, int fd)
{
    memset(ring, 0, sizeof *ring);
    int version = TPACKET_V2, one = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
        return -1;
    struct tpacket_req req = {
        .tp_block_size = NIO_RING_BLOCK,
        .tp_block_nr = NIO_RING_BLOCKS,
        .tp_frame_size = NIO_RING_FRAME,
        .tp_frame_nr = NIO_RING_BLOCK / NIO_RING_FRAME * NIO_RING_BLOCKS,
    };
    if (setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
        return -1;
    size_t size = (size_t)NIO_RING_BLOCK * NIO_RING_BLOCKS;
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        struct tpacket_req none = {0};
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof none);
        return -1;
    }
    ring->map = map;
    ring->size = size;
    ring->frames = req.tp_frame_nr;
    ring->frame_size = NIO_RING_FRAME;
    return 0;
}

/* Unmap the ring and take it off the socket, which is then read as before it had one. */
void nio_ring_close(nio_ring *ring, int fd)
{
    if (!ring->map)
        return;
    munmap(ring->map, ring->size);
    struct tpacket_req none = {0};
    setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof none);
    int version = TPACKET_V1;
    setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version);
    ring->map = NULL;
}

/* The next slot the kernel has filled, or NULL. */
struct tpacket2_hdr *nio_ring_next(nio_ring *ring)
{
    struct tpacket2_hdr *slot = (void *)(ring->map + (size_t)ring->next * ring->frame_size);
    if (!(__atomic_load_n(&slot->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
        return NULL;
    return slot;
}

/* Hand the slot nio_ring_next gave back to the kernel. */
void nio_ring_release(nio_ring *ring, struct tpacket2_hdr *slot)
{
    __atomic_store_n(&slot->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    ring->next = (ring->next + 1) % ring->frames;
}

const struct sockaddr_ll *nio_ring_address(const struct tpacket2_hdr *slot)
{
    return (const void *)((const uint8_t *)slot + TPACKET_ALIGN(sizeof *slot));
}
