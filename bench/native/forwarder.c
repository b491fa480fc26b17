/*
 * The least a software switch can do, for bench/forwarding.py: frames received on port 1 leave
 * on port 2 and the other way round, read with recvmmsg(2) and written with sendmmsg(2) in
 * batches on two AF_PACKET sockets. Its rate is the limit of the veth path on the machine.
 *
 *   forwarder IF1 IF2 [BATCH]
 *
 * Prints "ready" once both sockets are bound; on SIGTERM or SIGINT, one JSON line:
 * {"received": r, "forwarded": f, "send_errors": e}.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define FRAME_MAX (65536 + 64)
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

static volatile sig_atomic_t stopping;

static void on_signal(int signum)
{
    (void)signum;
    stopping = 1;
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "forwarder: %s: %s\n", what, detail);
    exit(2);
}

static int open_port(const char *name)
{
    unsigned ifindex = if_nametoindex(name);
    if (!ifindex)
        die("no such interface in this network namespace", name);
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0)
        die("cannot open an AF_PACKET socket (needs root or CAP_NET_RAW)", strerror(errno));
    int size = 4 << 20, one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one); /* best effort */
    struct sockaddr_ll address = {
        .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = (int)ifindex};
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0)
        die("cannot bind the socket to the interface", strerror(errno));
    return fd;
}

struct batch {
    struct mmsghdr rx[MAX_BATCH], tx[MAX_BATCH];
    struct iovec vectors[MAX_BATCH];
    struct sockaddr_ll from[MAX_BATCH];
    uint8_t (*buffers)[FRAME_MAX];
};

struct totals {
    unsigned long long received, forwarded, send_errors;
};

/* Move what `in` holds to `out`, a batch at a time, until `in` is empty or 16 batches have
   gone (then the other port gets its turn). */
static void drain(int in, int out, struct batch *b, unsigned size, struct totals *t)
{
    for (int round = 0; round < 16 && !stopping; round++) {
        for (unsigned i = 0; i < size; i++) {
            b->vectors[i] = (struct iovec){b->buffers[i], FRAME_MAX};
            b->rx[i].msg_hdr = (struct msghdr){.msg_name = &b->from[i],
                                               .msg_namelen = sizeof b->from[i],
                                               .msg_iov = &b->vectors[i],
                                               .msg_iovlen = 1};
        }
        int got = recvmmsg(in, b->rx, size, MSG_DONTWAIT, NULL);
        if (got <= 0)
            return;
        unsigned n = 0;
        for (int i = 0; i < got; i++) {
            if (b->from[i].sll_pkttype == PACKET_OUTGOING)
                continue;
            b->vectors[i].iov_len = b->rx[i].msg_len;
            b->tx[n++].msg_hdr = (struct msghdr){.msg_iov = &b->vectors[i], .msg_iovlen = 1};
        }
        t->received += n;
        for (unsigned sent = 0; sent < n;) {
            int done = sendmmsg(out, b->tx + sent, n - sent, 0);
            if (done <= 0) { /* a full queue: these frames are dropped, as a switch would */
                t->send_errors += n - sent;
                break;
            }
            sent += (unsigned)done;
            t->forwarded += (unsigned)done;
        }
        if ((unsigned)got < size)
            return;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        die("usage", "forwarder IF1 IF2 [BATCH]");
    unsigned size = 64;
    if (argc == 4) {
        char *end;
        long value = strtol(argv[3], &end, 10);
        if (*end || value < 1 || value > MAX_BATCH)
            die("BATCH must be a whole number from 1 to 1024", argv[3]);
        size = (unsigned)value;
    }
    int ports[2] = {open_port(argv[1]), open_port(argv[2])};
    static struct batch b;
    b.buffers = calloc(size, FRAME_MAX);
    if (!b.buffers)
        die("out of memory", "receive buffers");
    struct sigaction action = {.sa_handler = on_signal}; /* no SA_RESTART: poll returns */
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    struct pollfd fds[2] = {{.fd = ports[0], .events = POLLIN}, {.fd = ports[1], .events = POLLIN}};
    struct totals t = {0, 0, 0};
    printf("ready\n");
    fflush(stdout);
    while (!stopping) {
        if (poll(fds, 2, 200) < 0) {
            if (errno == EINTR)
                continue;
            die("poll failed", strerror(errno));
        }
        for (int i = 0; i < 2; i++)
            if (fds[i].revents & POLLIN)
                drain(ports[i], ports[1 - i], &b, size, &t);
    }
    printf("{\"received\": %llu, \"forwarded\": %llu, \"send_errors\": %llu}\n", t.received,
           t.forwarded, t.send_errors);
    return 0;
}
