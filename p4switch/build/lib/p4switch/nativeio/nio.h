/* The native I/O loop of p4switch: egress queues and the switch loop, shared declarations. */
#ifndef P4SWITCH_NIO_H
#define P4SWITCH_NIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "abi.h"  /* the pipeline's calling convention (p4switch/src/p4switch/native/abi.h) */

/* --- egress shaping (queue.c) ------------------------------------------------------------- */

enum { NIO_SEND_NOW = 0, NIO_QUEUED = 1, NIO_LOSS = 2, NIO_QUEUE_FULL = 3 };

typedef struct {
    double due;      /* when it may leave (monotonic seconds) */
    double ref;      /* what its lateness is measured from */
    uint64_t seq;    /* offer order, to break ties in the reorder heap */
    uint32_t len;
    uint8_t *data;   /* malloc'd copy of the frame, owned by whoever holds the entry */
} nio_frame;

typedef struct {
    double delay_s;
    double rate_bps;   /* 0: no rate */
    double loss;
    double jitter_s;
    uint32_t queue_limit;
    int reorder;
} nio_spec;

typedef struct {
    nio_spec spec;
    nio_frame *fifo;   /* ring, in order: every spec without reorder */
    size_t fifo_cap, fifo_head, fifo_len;
    nio_frame *heap;   /* a heap by (due, seq): specs with reorder */
    size_t heap_cap, heap_len;
    uint64_t sequence;
    double *ser;       /* ring of serialisation end times, in order */
    size_t ser_cap, ser_head, ser_len;
    double last_end;
    double lateness_max_s;
    uint64_t rng[4];
} nio_queue;

void nio_queue_init(nio_queue *q, uint64_t seed, uint32_t port);
void nio_queue_clear(nio_queue *q);
void nio_queue_set_spec(nio_queue *q, const nio_spec *spec);
int nio_queue_offer(nio_queue *q, const uint8_t *data, uint32_t len, double now);
size_t nio_queue_pop_due(nio_queue *q, double now, nio_frame *out, size_t max);
int nio_queue_next_due(const nio_queue *q, double *due);
size_t nio_queue_backlog(const nio_queue *q, double now);
size_t nio_queue_held(const nio_queue *q);
int nio_spec_is_passthrough(const nio_spec *spec);

/* --- the receive ring (ring.c) ------------------------------------------------------------- */

struct tpacket2_hdr;
struct sockaddr_ll;

typedef struct {
    uint8_t *map; /* NULL: no ring, read the socket with recvmmsg */
    size_t size;
    unsigned frames, frame_size, next;
} nio_ring;

int nio_ring_open(nio_ring *ring, int fd);
void nio_ring_close(nio_ring *ring, int fd);
struct tpacket2_hdr *nio_ring_next(nio_ring *ring);
void nio_ring_release(nio_ring *ring, struct tpacket2_hdr *slot);
const struct sockaddr_ll *nio_ring_address(const struct tpacket2_hdr *slot);

/* --- capture files (pcap.c) ---------------------------------------------------------------- */

int nio_pcap_open(FILE **file, const char *path);
void nio_pcap_write(FILE *file, const uint8_t *data, uint32_t len);

#endif
