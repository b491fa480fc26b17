/* One shaped egress port's frames and the times they are due: p4switch.shaping.EgressQueue in C.
 *
 * Loss when queued, rate as serialisation (at most queue_limit frames waiting for or in it,
 * drop tail), a delay line, jitter uniform in [-j, +j] clipped at 0, in offer order unless
 * reorder (then a heap by due time, ties in offer order). The loss and jitter draws come from
 * xoshiro256** seeded from the switch's seed and the port number.
 */
#include "nio.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* A draw uniform in [0, 1). */
static double draw(nio_queue *q)
{
    uint64_t *s = q->rng;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return (double)(result >> 11) * 0x1.0p-53;
}

int nio_spec_is_passthrough(const nio_spec *spec)
{
    return spec->delay_s == 0 && spec->rate_bps == 0 && spec->loss == 0 && spec->jitter_s == 0;
}

static int is_steady(const nio_spec *spec) { return spec->jitter_s == 0 && !spec->reorder; }

void nio_queue_init(nio_queue *q, uint64_t seed, uint32_t port)
{
    memset(q, 0, sizeof *q);
    uint64_t state = seed ^ ((uint64_t)port * 0xD1B54A32D192ED03ULL);
    for (int i = 0; i < 4; i++)
        q->rng[i] = splitmix64(&state);
    q->last_end = -INFINITY;
    q->spec.queue_limit = 1000;
}

void nio_queue_clear(nio_queue *q)
{
    for (size_t i = 0; i < q->fifo_len; i++)
        free(q->fifo[(q->fifo_head + i) % q->fifo_cap].data);
    for (size_t i = 0; i < q->heap_len; i++)
        free(q->heap[i].data);
    free(q->fifo);
    free(q->heap);
    free(q->ser);
    q->fifo = q->heap = NULL;
    q->ser = NULL;
    q->fifo_cap = q->fifo_head = q->fifo_len = q->heap_cap = q->heap_len = 0;
    q->ser_cap = q->ser_head = q->ser_len = 0;
}

/* --- rings and the heap -------------------------------------------------------------------- */

static int fifo_push(nio_queue *q, nio_frame frame)
{
    if (q->fifo_len == q->fifo_cap) {
        size_t cap = q->fifo_cap ? 2 * q->fifo_cap : 64;
        nio_frame *grown = malloc(cap * sizeof *grown);
        if (!grown)
            return -1;
        for (size_t i = 0; i < q->fifo_len; i++)
            grown[i] = q->fifo[(q->fifo_head + i) % q->fifo_cap];
        free(q->fifo);
        q->fifo = grown;
        q->fifo_cap = cap;
        q->fifo_head = 0;
    }
    q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = frame;
    q->fifo_len++;
    return 0;
}

static nio_frame *fifo_at(const nio_queue *q, size_t i)
{
    return &q->fifo[(q->fifo_head + i) % q->fifo_cap];
}

static nio_frame fifo_pop(nio_queue *q)
{
    nio_frame frame = q->fifo[q->fifo_head];
    q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
    q->fifo_len--;
    return frame;
}

static int ser_push(nio_queue *q, double end)
{
    if (q->ser_len == q->ser_cap) {
        size_t cap = q->ser_cap ? 2 * q->ser_cap : 64;
        double *grown = malloc(cap * sizeof *grown);
        if (!grown)
            return -1;
        for (size_t i = 0; i < q->ser_len; i++)
            grown[i] = q->ser[(q->ser_head + i) % q->ser_cap];
        free(q->ser);
        q->ser = grown;
        q->ser_cap = cap;
        q->ser_head = 0;
    }
    q->ser[(q->ser_head + q->ser_len) % q->ser_cap] = end;
    q->ser_len++;
    return 0;
}

/* Forget the serialisations that have ended by `now`. */
static void ser_expire(nio_queue *q, double now)
{
    while (q->ser_len && q->ser[q->ser_head] <= now) {
        q->ser_head = (q->ser_head + 1) % q->ser_cap;
        q->ser_len--;
    }
}

static int before(const nio_frame *a, const nio_frame *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static int heap_push(nio_queue *q, nio_frame frame)
{
    if (q->heap_len == q->heap_cap) {
        size_t cap = q->heap_cap ? 2 * q->heap_cap : 64;
        nio_frame *grown = realloc(q->heap, cap * sizeof *grown);
        if (!grown)
            return -1;
        q->heap = grown;
        q->heap_cap = cap;
    }
    size_t i = q->heap_len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&frame, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = frame;
    return 0;
}

static nio_frame heap_pop(nio_queue *q)
{
    nio_frame top = q->heap[0];
    nio_frame last = q->heap[--q->heap_len];
    size_t i = 0, n = q->heap_len;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && before(&q->heap[child + 1], &q->heap[child]))
            child++;
        if (!before(&q->heap[child], &last))
            break;
        q->heap[i] = q->heap[child];
        i = child;
    }
    if (n)
        q->heap[i] = last;
    return top;
}

static int by_due_then_seq(const void *a, const void *b)
{
    const nio_frame *x = a, *y = b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* --- the queue ----------------------------------------------------------------------------- */

/* Move held frames between the FIFO and the heap when `reorder` changes; they keep their times
 * (in order, each is due when it would have left behind the ones ahead of it). */
void nio_queue_set_spec(nio_queue *q, const nio_spec *spec)
{
    if (spec->reorder && q->fifo_len) {
        double leave = -INFINITY;
        while (q->fifo_len) {
            nio_frame frame = fifo_pop(q);
            leave = fmax(leave, frame.due);
            frame.due = leave;
            frame.ref = fmax(frame.ref, leave);
            frame.seq = q->sequence++;
            if (heap_push(q, frame) != 0)
                free(frame.data);
        }
    } else if (!spec->reorder && q->heap_len) {
        qsort(q->heap, q->heap_len, sizeof *q->heap, by_due_then_seq);
        for (size_t i = 0; i < q->heap_len; i++)
            if (fifo_push(q, q->heap[i]) != 0)
                free(q->heap[i].data);
        q->heap_len = 0;
    }
    q->spec = *spec;
}

static int hold(nio_queue *q, const uint8_t *data, uint32_t len, double due, int sorted)
{
    nio_frame frame = {.due = due, .ref = due, .seq = 0, .len = len, .data = malloc(len ? len : 1)};
    if (!frame.data)
        return NIO_QUEUE_FULL;
    memcpy(frame.data, data, len);
    if (sorted) {
        frame.seq = q->sequence++;
        if (heap_push(q, frame) == 0)
            return NIO_QUEUED;
    } else if (fifo_push(q, frame) == 0) {
        return NIO_QUEUED;
    }
    free(frame.data);
    return NIO_QUEUE_FULL;
}

/* The end of the frame's serialisation, or NAN when the serialisation queue is full. */
static double serialise(nio_queue *q, uint32_t len, double now)
{
    ser_expire(q, now);
    if (q->ser_len >= q->spec.queue_limit)
        return NAN;
    double end = fmax(now, q->last_end) + (double)len * 8.0 / q->spec.rate_bps;
    if (ser_push(q, end) != 0)
        return NAN;
    q->last_end = end;
    return end;
}

/* Queue a frame arriving at `now`, say to send it now, or drop it (NIO_* verdict). */
int nio_queue_offer(nio_queue *q, const uint8_t *data, uint32_t len, double now)
{
    const nio_spec *spec = &q->spec;
    if (spec->loss && draw(q) < spec->loss)
        return NIO_LOSS;
    double start = now;
    if (spec->rate_bps) {
        start = serialise(q, len, now);
        if (isnan(start))
            return NIO_QUEUE_FULL;
    } else if (is_steady(spec) && !spec->delay_s && !q->fifo_len) {
        return NIO_SEND_NOW;
    }
    if (is_steady(spec))
        return hold(q, data, len, start + spec->delay_s, 0);
    double delay = spec->delay_s;
    if (spec->jitter_s)
        delay += spec->jitter_s * (2.0 * draw(q) - 1.0);
    double due = start + fmax(delay, 0.0);
    if (spec->reorder)
        return hold(q, data, len, due, 1);
    if (q->fifo_len && fifo_at(q, q->fifo_len - 1)->due > due)
        due = fifo_at(q, q->fifo_len - 1)->due; /* never before the frame queued ahead */
    return hold(q, data, len, due, 0);
}

/* Up to `max` frames due at or before `now`, in the order they leave, into `out` (the caller
 * frees their data). The lateness of the first counts towards lateness_max_s. */
size_t nio_queue_pop_due(nio_queue *q, double now, nio_frame *out, size_t max)
{
    size_t n = 0;
    if (q->fifo_len) {
        while (n < max && q->fifo_len && q->fifo[q->fifo_head].due <= now)
            out[n++] = fifo_pop(q);
    } else {
        while (n < max && q->heap_len && q->heap[0].due <= now)
            out[n++] = heap_pop(q);
    }
    if (n && now - out[0].ref > q->lateness_max_s)
        q->lateness_max_s = now - out[0].ref;
    return n;
}

int nio_queue_next_due(const nio_queue *q, double *due)
{
    if (q->fifo_len) {
        *due = q->fifo[q->fifo_head].due;
        return 1;
    }
    if (q->heap_len) {
        *due = q->heap[0].due;
        return 1;
    }
    return 0;
}

/* Frames waiting for (or in) serialisation at `now`: what queue_limit bounds. */
size_t nio_queue_backlog(const nio_queue *q, double now)
{
    size_t waiting = 0;
    for (size_t i = q->ser_len; i > 0; i--) {
        if (q->ser[(q->ser_head + i - 1) % q->ser_cap] <= now)
            break;
        waiting++;
    }
    return waiting;
}

size_t nio_queue_held(const nio_queue *q) { return q->fifo_len + q->heap_len; }

/* --- a queue on its own, for tests through ctypes ------------------------------------------ */

nio_queue *nio_queue_new(uint64_t seed, uint32_t port)
{
    nio_queue *q = malloc(sizeof *q);
    if (q)
        nio_queue_init(q, seed, port);
    return q;
}

void nio_queue_free(nio_queue *q)
{
    if (q) {
        nio_queue_clear(q);
        free(q);
    }
}

double nio_queue_lateness(nio_queue *q, int reset)
{
    double lateness = q->lateness_max_s;
    if (reset)
        q->lateness_max_s = 0.0;
    return lateness;
}

void nio_free(void *p) { free(p); }
