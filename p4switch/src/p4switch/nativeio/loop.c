/* The native I/O loop: AF_PACKET ports read with recvmmsg and written with sendmmsg, each frame
 * run through a p4s_process_fn, shaped egress ports served from their nio_queue.
 *
 * One thread runs nio_run; every other entry point may be called from any thread. The loop
 * never holds a lock while it calls out (the processor, the CPU-port listener): a processor
 * that takes its own lock may be swapped, and the switch asked for its counters, by a thread
 * holding that lock, and a callback may call back into the switch. The mutex guards the egress
 * queues, the peaks and the packet-outs; the processor is an atomic pointer (the bindings it
 * replaced are kept until nio_destroy); counters have a single writer, the loop, and are read
 * with relaxed atomic loads.
 */
#define _GNU_SOURCE
#include "nio.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NIO_BATCH 64              /* frames per recvmmsg / sendmmsg */
#define NIO_RX_BYTES (65536 + 64) /* any frame, GRO'd ones included */
#define NIO_HEAD 4                /* room before each received frame to put its VLAN tag back */
#define NIO_CONTROL 128           /* ancillary room: auxdata and a receive time */
#define NIO_DIRECT 256            /* port numbers below this are looked up in a table */
#define TP_STATUS_VLAN_VALID_ 0x10
#define TP_STATUS_VLAN_TPID_VALID_ 0x40

enum {
    D_PIPELINE_DROP, D_PIPELINE_ERROR, D_NO_SUCH_PORT, D_LOSS, D_QUEUE_FULL, D_TX_ERROR,
    D_RX_OVERRUN, D_NO_CPU_LISTENER, D_CPU_LISTENER_ERROR, NIO_DROPS
};

typedef struct {
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
    uint64_t drops[NIO_DROPS];
} nio_counters;

typedef struct {
    nio_counters counters;
    uint64_t queue_depth, queue_held;
    double lateness_max_s, rx_lag_max_s;
} nio_port_stats;

/* Add to a counter only the loop writes, so that another thread reads whole values. */
#define BUMP(counter, n) \
    __atomic_store_n(&(counter), __atomic_load_n(&(counter), __ATOMIC_RELAXED) + (n), \
                     __ATOMIC_RELAXED)

/* Hands a frame to the CPU port's listener: 0 delivered, 1 the listener failed, 2 none. */
typedef int (*nio_cpu_fn)(const uint8_t *data, uint32_t len);

typedef struct {
    int fd;
    uint32_t number;
    int auxdata; /* read VLAN tags and receive times from the ancillary data */
    atomic_int shaped; /* send through the queue (a shaping spec, or frames still held) */
    nio_ring ring; /* the receive ring, if it has one (ring.c) */
    FILE *pcap_in, *pcap_out; /* capture files, if capturing (pcap.c) */
    nio_queue queue;
    nio_counters counters;
    double rx_lag_max_s;
    unsigned ntx; /* frames waiting in txbuf for the next sendmmsg */
    struct mmsghdr txmsg[NIO_BATCH];
    struct iovec txiov[NIO_BATCH];
    uint8_t *txbuf;
} nio_port;

typedef struct nio_binding {
    struct nio_binding *retired; /* the binding this one replaced */
    p4s_process_fn process;
    void *ctx;
} nio_binding;

typedef struct nio_injected {
    struct nio_injected *next;
    uint32_t port, len;
    uint8_t data[];
} nio_injected;

typedef struct {
    pthread_mutex_t lock;
    unsigned nports;
    nio_port *ports;
    int16_t direct[NIO_DIRECT]; /* port number -> index, -1: none */
    int wake_fd;
    int has_cpu;
    uint32_t cpu_port;
    nio_counters cpu;
    _Atomic(nio_binding *) binding;
    atomic_uint_fast64_t epoch; /* loop iterations completed: none is still in a retired binding */
    _Atomic(nio_cpu_fn) on_cpu;
    nio_injected *inj_head, *inj_tail;
    p4s_out *out;
    struct mmsghdr rxmsg[NIO_BATCH];
    struct iovec rxiov[NIO_BATCH];
    struct sockaddr_ll rxaddr[NIO_BATCH];
    uint8_t rxctl[NIO_BATCH][NIO_CONTROL];
    uint8_t *rxbuf;
    struct pollfd *pfds;
} nio_switch;

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static nio_port *lookup(nio_switch *sw, uint32_t number)
{
    if (number < NIO_DIRECT)
        return sw->direct[number] < 0 ? NULL : &sw->ports[sw->direct[number]];
    for (unsigned i = 0; i < sw->nports; i++)
        if (sw->ports[i].number == number)
            return &sw->ports[i];
    return NULL;
}

void nio_destroy(nio_switch *sw);

/* A switch over `nports` open sockets; `wake_fd` is the read end of its wake-up pipe. With
 * `rx_ring`, ports read with auxdata get a receive ring where the kernel allows one. */
nio_switch *nio_create(unsigned nports, const int *fds, const uint32_t *numbers,
                       const int *auxdata, const uint64_t *seeds, int has_cpu, uint32_t cpu_port,
                       int wake_fd, int rx_ring)
{
    nio_switch *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NULL;
    pthread_mutex_init(&sw->lock, NULL);
    memset(sw->direct, 0xff, sizeof sw->direct);
    sw->nports = nports;
    sw->wake_fd = wake_fd;
    sw->has_cpu = has_cpu;
    sw->cpu_port = cpu_port;
    sw->ports = calloc(nports ? nports : 1, sizeof *sw->ports); /* none: P4Runtime only */
    sw->out = malloc(sizeof *sw->out);
    sw->rxbuf = malloc((size_t)NIO_BATCH * (NIO_HEAD + NIO_RX_BYTES));
    sw->pfds = calloc(nports + 1, sizeof *sw->pfds);
    if (!sw->ports || !sw->out || !sw->rxbuf || !sw->pfds) {
        nio_destroy(sw);
        return NULL;
    }
    for (unsigned i = 0; i < nports; i++) {
        nio_port *p = &sw->ports[i];
        p->fd = fds[i];
        p->number = numbers[i];
        p->auxdata = auxdata[i];
        nio_queue_init(&p->queue, seeds[i], numbers[i]);
        p->txbuf = malloc((size_t)NIO_BATCH * P4S_FRAME_MAX);
        if (!p->txbuf) {
            nio_destroy(sw);
            return NULL;
        }
        if (rx_ring && p->auxdata)
            nio_ring_open(&p->ring, p->fd); /* else (map NULL) read with recvmmsg */
        if (numbers[i] < NIO_DIRECT)
            sw->direct[numbers[i]] = (int16_t)i;
        sw->pfds[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    }
    sw->pfds[nports] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    return sw;
}

void nio_destroy(nio_switch *sw)
{
    if (!sw)
        return;
    for (unsigned i = 0; sw->ports && i < sw->nports; i++) {
        nio_ring_close(&sw->ports[i].ring, sw->ports[i].fd);
        if (sw->ports[i].pcap_in)
            fclose(sw->ports[i].pcap_in);
        if (sw->ports[i].pcap_out)
            fclose(sw->ports[i].pcap_out);
        nio_queue_clear(&sw->ports[i].queue);
        free(sw->ports[i].txbuf);
    }
    for (nio_binding *b = atomic_load(&sw->binding), *next; b; b = next) {
        next = b->retired;
        free(b);
    }
    while (sw->inj_head) {
        nio_injected *next = sw->inj_head->next;
        free(sw->inj_head);
        sw->inj_head = next;
    }
    pthread_mutex_destroy(&sw->lock);
    free(sw->ports);
    free(sw->out);
    free(sw->rxbuf);
    free(sw->pfds);
    free(sw);
}

/* Use `process` from the next frame on; 0, or -1 when out of memory. Never waits for the loop. */
int nio_set_processor(nio_switch *sw, p4s_process_fn process, void *ctx)
{
    nio_binding *binding = malloc(sizeof *binding);
    if (!binding)
        return -1;
    binding->process = process;
    binding->ctx = ctx;
    pthread_mutex_lock(&sw->lock); /* orders concurrent swaps; the loop never waits on it here */
    binding->retired = atomic_exchange(&sw->binding, binding);
    pthread_mutex_unlock(&sw->lock);
    return 0;
}

/* Loop iterations completed so far: a processor replaced before this count was read is out of
 * use once it has grown. */
uint64_t nio_epoch(nio_switch *sw) { return atomic_load(&sw->epoch); }

void nio_set_cpu_listener(nio_switch *sw, nio_cpu_fn on_cpu) { atomic_store(&sw->on_cpu, on_cpu); }

void nio_set_shape(nio_switch *sw, unsigned index, const nio_spec *spec)
{
    pthread_mutex_lock(&sw->lock);
    nio_port *p = &sw->ports[index];
    nio_queue_set_spec(&p->queue, spec);
    atomic_store(&p->shaped, !nio_spec_is_passthrough(spec) || nio_queue_held(&p->queue) > 0);
    pthread_mutex_unlock(&sw->lock);
}

/* Capture what port `index` receives and sends in these files (before the loop runs); 0, or the
 * errno that stopped it. */
int nio_set_capture(nio_switch *sw, unsigned index, const char *in_path, const char *out_path)
{
    nio_port *p = &sw->ports[index];
    int failure = nio_pcap_open(&p->pcap_in, in_path);
    return failure ? failure : nio_pcap_open(&p->pcap_out, out_path);
}

void nio_flush_captures(nio_switch *sw)
{
    for (unsigned i = 0; i < sw->nports; i++) {
        if (sw->ports[i].pcap_in)
            fflush(sw->ports[i].pcap_in);
        if (sw->ports[i].pcap_out)
            fflush(sw->ports[i].pcap_out);
    }
}

/* Queue a packet-out for the loop; 0, or -1 when out of memory. */
int nio_inject(nio_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len)
{
    nio_injected *frame = malloc(sizeof *frame + len);
    if (!frame)
        return -1;
    frame->next = NULL;
    frame->port = ingress_port;
    frame->len = len;
    memcpy(frame->data, data, len);
    pthread_mutex_lock(&sw->lock);
    if (sw->inj_tail)
        sw->inj_tail->next = frame;
    else
        sw->inj_head = frame;
    sw->inj_tail = frame;
    pthread_mutex_unlock(&sw->lock);
    return 0;
}

/* --- sending ------------------------------------------------------------------------------- */

/* sendmmsg the first `n` messages of `msgs`; count what left and what the kernel refused. */
static void send_all(nio_port *p, struct mmsghdr *msgs, unsigned n)
{
    unsigned done = 0;
    while (done < n) {
        int sent = sendmmsg(p->fd, msgs + done, n - done, MSG_DONTWAIT);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            BUMP(p->counters.drops[D_TX_ERROR], 1); /* the first one failed: skip it, go on */
            done++;
            continue;
        }
        uint64_t bytes = 0;
        for (int i = 0; i < sent; i++) {
            struct iovec *frame = msgs[done + i].msg_hdr.msg_iov;
            bytes += frame->iov_len;
            if (p->pcap_out)
                nio_pcap_write(p->pcap_out, frame->iov_base, (uint32_t)frame->iov_len);
        }
        BUMP(p->counters.tx_packets, (uint64_t)sent);
        BUMP(p->counters.tx_bytes, bytes);
        done += (unsigned)sent;
    }
}

static void flush(nio_port *p)
{
    if (p->ntx) {
        send_all(p, p->txmsg, p->ntx);
        p->ntx = 0;
    }
}

static void send_later(nio_port *p, const uint8_t *data, uint32_t len)
{
    if (p->ntx == NIO_BATCH)
        flush(p);
    unsigned i = p->ntx++;
    uint8_t *slot = p->txbuf + (size_t)i * P4S_FRAME_MAX;
    memcpy(slot, data, len);
    p->txiov[i] = (struct iovec){.iov_base = slot, .iov_len = len};
    memset(&p->txmsg[i], 0, sizeof p->txmsg[i]);
    p->txmsg[i].msg_hdr.msg_iov = &p->txiov[i];
    p->txmsg[i].msg_hdr.msg_iovlen = 1;
}

/* Send every held frame of `p` whose time has come. */
static void release(nio_port *p, double now)
{
    nio_frame due[NIO_BATCH];
    struct mmsghdr msgs[NIO_BATCH];
    struct iovec iovs[NIO_BATCH];
    size_t n;
    flush(p);
    while ((n = nio_queue_pop_due(&p->queue, now, due, NIO_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            iovs[i] = (struct iovec){.iov_base = due[i].data, .iov_len = due[i].len};
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        send_all(p, msgs, (unsigned)n);
        for (size_t i = 0; i < n; i++)
            free(due[i].data);
    }
    if (!nio_queue_held(&p->queue) && nio_spec_is_passthrough(&p->queue.spec))
        atomic_store(&p->shaped, 0);
}

/* --- processing ---------------------------------------------------------------------------- */

static void to_cpu(nio_switch *sw, uint32_t egress, const uint8_t *data, uint32_t len,
                   nio_counters *ingress)
{
    if (!sw->has_cpu || egress != sw->cpu_port) {
        BUMP(ingress->drops[D_NO_SUCH_PORT], 1);
        return;
    }
    nio_cpu_fn on_cpu = atomic_load(&sw->on_cpu);
    int outcome = on_cpu ? on_cpu(data, len) : 2;
    if (outcome == 0) {
        BUMP(sw->cpu.tx_packets, 1);
        BUMP(sw->cpu.tx_bytes, len);
    } else {
        BUMP(sw->cpu.drops[outcome == 1 ? D_CPU_LISTENER_ERROR : D_NO_CPU_LISTENER], 1);
    }
}

static void emit(nio_switch *sw, uint32_t egress, const uint8_t *data, uint32_t len,
                 nio_counters *ingress)
{
    nio_port *p = lookup(sw, egress);
    if (!p) {
        to_cpu(sw, egress, data, len, ingress);
        return;
    }
    if (!atomic_load_explicit(&p->shaped, memory_order_relaxed)) {
        send_later(p, data, len);
        return;
    }
    flush(p); /* frames sent before this one leave first */
    pthread_mutex_lock(&sw->lock);
    int verdict = nio_queue_offer(&p->queue, data, len, clock_s(CLOCK_MONOTONIC));
    pthread_mutex_unlock(&sw->lock);
    switch (verdict) {
    case NIO_SEND_NOW:
        send_later(p, data, len);
        break;
    case NIO_LOSS:
        BUMP(p->counters.drops[D_LOSS], 1);
        break;
    case NIO_QUEUE_FULL:
        BUMP(p->counters.drops[D_QUEUE_FULL], 1);
        break;
    default:
        break;
    }
}

/* Run one frame through the processor and emit what it returns. */
static void handle(nio_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                   nio_counters *ingress)
{
    p4s_out *out = sw->out;
    nio_binding *binding = atomic_load_explicit(&sw->binding, memory_order_acquire);
    out->n = 0;
    if (!binding || binding->process(binding->ctx, ingress_port, data, len, out) != 0 ||
        out->n > P4S_MAX_OUT) {
        BUMP(ingress->drops[D_PIPELINE_ERROR], 1);
        return;
    }
    if (out->n == 0) {
        BUMP(ingress->drops[D_PIPELINE_DROP], 1);
        return;
    }
    for (uint32_t i = 0; i < out->n; i++) {
        if (out->len[i] > P4S_FRAME_MAX)
            BUMP(ingress->drops[D_PIPELINE_ERROR], 1);
        else
            emit(sw, out->port[i], out->data[i], out->len[i], ingress);
    }
}

static void drain_injected(nio_switch *sw)
{
    for (;;) {
        pthread_mutex_lock(&sw->lock);
        nio_injected *frame = sw->inj_head;
        if (frame) {
            sw->inj_head = frame->next;
            if (!sw->inj_head)
                sw->inj_tail = NULL;
        }
        pthread_mutex_unlock(&sw->lock);
        if (!frame)
            return;
        BUMP(sw->cpu.rx_packets, 1);
        BUMP(sw->cpu.rx_bytes, frame->len);
        handle(sw, frame->port, frame->data, frame->len, &sw->cpu);
        free(frame);
    }
}

/* The frame as it was on the wire (outer VLAN tag put back) and when the kernel received it. */
static uint8_t *as_on_wire(struct msghdr *msg, uint8_t *data, uint32_t *len, double *stamp)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *stamp = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
        } else if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA) {
            struct tpacket_auxdata aux;
            memcpy(&aux, CMSG_DATA(c), sizeof aux);
            if (!(aux.tp_status & TP_STATUS_VLAN_VALID_) || *len < 12)
                continue;
            uint16_t tpid = aux.tp_status & TP_STATUS_VLAN_TPID_VALID_ ? aux.tp_vlan_tpid : 0x8100;
            uint16_t tci = aux.tp_vlan_tci;
            memmove(data - NIO_HEAD, data, 12);
            data -= NIO_HEAD;
            uint8_t tag[4] = {tpid >> 8, tpid & 0xff, tci >> 8, tci & 0xff};
            memcpy(data + 12, tag, 4);
            *len += NIO_HEAD;
        }
    }
    return data;
}

static void note_lag(nio_switch *sw, nio_port *p, double lag)
{
    pthread_mutex_lock(&sw->lock);
    p->rx_lag_max_s = fmax(p->rx_lag_max_s, lag);
    pthread_mutex_unlock(&sw->lock);
}

/* Receive and handle up to `max` frames from the port's socket; how many it read. */
static int receive_msgs(nio_switch *sw, nio_port *p, unsigned max)
{
    for (unsigned i = 0; i < max; i++) {
        uint8_t *slot = sw->rxbuf + (size_t)i * (NIO_HEAD + NIO_RX_BYTES) + NIO_HEAD;
        sw->rxiov[i] = (struct iovec){.iov_base = slot, .iov_len = NIO_RX_BYTES};
        struct msghdr *h = &sw->rxmsg[i].msg_hdr;
        h->msg_name = &sw->rxaddr[i];
        h->msg_namelen = sizeof sw->rxaddr[i];
        h->msg_iov = &sw->rxiov[i];
        h->msg_iovlen = 1;
        h->msg_control = p->auxdata ? sw->rxctl[i] : NULL;
        h->msg_controllen = p->auxdata ? NIO_CONTROL : 0;
        h->msg_flags = 0;
    }
    int n = recvmmsg(p->fd, sw->rxmsg, max, MSG_DONTWAIT, NULL);
    if (n <= 0)
        return 0;
    double now = clock_s(CLOCK_MONOTONIC);
    double offset = clock_s(CLOCK_REALTIME) - now; /* kernel receive times are Unix times */
    double lag_max = 0.0;
    for (int i = 0; i < n; i++) {
        if (sw->rxaddr[i].sll_pkttype == PACKET_OUTGOING)
            continue;
        uint32_t len = sw->rxmsg[i].msg_len;
        uint8_t *data = sw->rxiov[i].iov_base;
        if (p->auxdata) {
            double stamp = NAN;
            data = as_on_wire(&sw->rxmsg[i].msg_hdr, data, &len, &stamp);
            if (!isnan(stamp))
                lag_max = fmax(lag_max, now - (stamp - offset));
        }
        BUMP(p->counters.rx_packets, 1);
        BUMP(p->counters.rx_bytes, len);
        if (p->pcap_in)
            nio_pcap_write(p->pcap_in, data, len);
        handle(sw, p->number, data, len, &p->counters);
    }
    note_lag(sw, p, lag_max);
    return n;
}

/* Handle up to NIO_BATCH frames from the port's receive ring; how many slots it took. */
static unsigned receive_ring(nio_switch *sw, nio_port *p)
{
    double now = clock_s(CLOCK_MONOTONIC);
    double offset = clock_s(CLOCK_REALTIME) - now;
    double lag_max = 0.0;
    unsigned n = 0;
    struct tpacket2_hdr *slot;
    while (n < NIO_BATCH && (slot = nio_ring_next(&p->ring)) != NULL) {
        n++;
        uint32_t status = slot->tp_status;
        if (status & TP_STATUS_COPY) { /* too long for a slot: read it whole from the socket */
            nio_ring_release(&p->ring, slot);
            receive_msgs(sw, p, 1);
            continue;
        }
        if (nio_ring_address(slot)->sll_pkttype == PACKET_OUTGOING) {
            nio_ring_release(&p->ring, slot);
            continue;
        }
        if (slot->tp_snaplen < slot->tp_len) { /* cut, and no room left to queue it whole */
            BUMP(p->counters.drops[D_RX_OVERRUN], 1);
            nio_ring_release(&p->ring, slot);
            continue;
        }
        uint8_t *data = (uint8_t *)slot + slot->tp_mac;
        uint32_t len = slot->tp_snaplen;
        if ((status & TP_STATUS_VLAN_VALID_) && len >= 12) { /* room before tp_mac: see ring.c */
            uint16_t tpid = status & TP_STATUS_VLAN_TPID_VALID_ ? slot->tp_vlan_tpid : 0x8100;
            uint16_t tci = slot->tp_vlan_tci;
            memmove(data - NIO_HEAD, data, 12);
            data -= NIO_HEAD;
            uint8_t tag[4] = {tpid >> 8, tpid & 0xff, tci >> 8, tci & 0xff};
            memcpy(data + 12, tag, 4);
            len += NIO_HEAD;
        }
        lag_max = fmax(lag_max, now - ((double)slot->tp_sec + slot->tp_nsec * 1e-9 - offset));
        BUMP(p->counters.rx_packets, 1);
        BUMP(p->counters.rx_bytes, len);
        if (p->pcap_in)
            nio_pcap_write(p->pcap_in, data, len);
        handle(sw, p->number, data, len, &p->counters);
        nio_ring_release(&p->ring, slot);
    }
    note_lag(sw, p, lag_max);
    return n;
}

/* Receive and handle up to NIO_BATCH frames from one port: from its ring if it has one (and
 * from the socket when the ring is empty: frames queued before the ring was set up). */
static void receive(nio_switch *sw, nio_port *p)
{
    if (!p->ring.map || receive_ring(sw, p) == 0)
        receive_msgs(sw, p, NIO_BATCH);
}

/* The earliest due time of any held frame, or INFINITY. */
static double next_due(nio_switch *sw)
{
    double earliest = INFINITY, due;
    for (unsigned i = 0; i < sw->nports; i++)
        if (atomic_load(&sw->ports[i].shaped) && nio_queue_next_due(&sw->ports[i].queue, &due))
            earliest = fmin(earliest, due);
    return earliest;
}

static int drain_wake(int fd)
{
    char junk[256];
    while (read(fd, junk, sizeof junk) > 0)
        ;
    return 1;
}

/* Forward for up to `max_wait` seconds, or until woken; 0, or the errno that stopped it. */
int nio_run(nio_switch *sw, double max_wait)
{
    double deadline = clock_s(CLOCK_MONOTONIC) + max_wait;
    for (;;) {
        double now = clock_s(CLOCK_MONOTONIC);
        pthread_mutex_lock(&sw->lock);
        double timeout = fmin(deadline, next_due(sw)) - now;
        pthread_mutex_unlock(&sw->lock);
        timeout = fmax(timeout, 0.0);
        struct timespec ts = {.tv_sec = (time_t)timeout,
                              .tv_nsec = (long)((timeout - (double)(time_t)timeout) * 1e9)};
        int ready = ppoll(sw->pfds, sw->nports + 1, &ts, NULL);
        if (ready < 0 && errno != EINTR)
            return errno;
        int woken = 0;
        if (ready > 0 && sw->pfds[sw->nports].revents)
            woken = drain_wake(sw->wake_fd);
        drain_injected(sw);
        for (unsigned i = 0; ready > 0 && i < sw->nports; i++) {
            if (sw->pfds[i].revents & POLLNVAL) {
                atomic_fetch_add(&sw->epoch, 1);
                return EBADF;
            }
            if (sw->pfds[i].revents)
                receive(sw, &sw->ports[i]);
        }
        now = clock_s(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < sw->nports; i++) {
            flush(&sw->ports[i]);
            if (atomic_load(&sw->ports[i].shaped)) {
                pthread_mutex_lock(&sw->lock);
                release(&sw->ports[i], now);
                pthread_mutex_unlock(&sw->lock);
            }
        }
        atomic_fetch_add(&sw->epoch, 1);
        if (woken || now >= deadline)
            return 0;
    }
}

/* --- counters ------------------------------------------------------------------------------ */

static void read_counters(const nio_counters *from, nio_counters *to)
{
    to->rx_packets = __atomic_load_n(&from->rx_packets, __ATOMIC_RELAXED);
    to->rx_bytes = __atomic_load_n(&from->rx_bytes, __ATOMIC_RELAXED);
    to->tx_packets = __atomic_load_n(&from->tx_packets, __ATOMIC_RELAXED);
    to->tx_bytes = __atomic_load_n(&from->tx_bytes, __ATOMIC_RELAXED);
    for (int i = 0; i < NIO_DROPS; i++)
        to->drops[i] = __atomic_load_n(&from->drops[i], __ATOMIC_RELAXED);
}

void nio_port_stats_of(nio_switch *sw, unsigned index, int reset_peaks, nio_port_stats *out)
{
    nio_port *p = &sw->ports[index];
    read_counters(&p->counters, &out->counters);
    pthread_mutex_lock(&sw->lock);
    out->queue_depth = nio_queue_backlog(&p->queue, clock_s(CLOCK_MONOTONIC));
    out->queue_held = nio_queue_held(&p->queue);
    out->lateness_max_s = p->queue.lateness_max_s;
    out->rx_lag_max_s = p->rx_lag_max_s;
    if (reset_peaks) {
        p->queue.lateness_max_s = 0.0;
        p->rx_lag_max_s = 0.0;
    }
    pthread_mutex_unlock(&sw->lock);
}

void nio_cpu_stats(nio_switch *sw, nio_counters *out) { read_counters(&sw->cpu, out); }
