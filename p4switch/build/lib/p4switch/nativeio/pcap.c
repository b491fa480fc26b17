/* Capture files as p4switch.pcap writes them: classic libpcap, little-endian, microsecond
 * timestamps, snap length 262144, link type Ethernet; buffered, flushed when the loop stops. */
#define _GNU_SOURCE
#include "nio.h"

#include <errno.h>
#include <time.h>

#define NIO_PCAP_SNAPLEN 262144u
#define NIO_PCAP_BUFFER (1u << 20)

static void put32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

/* Create `path` and write its file header; 0, or the errno that stopped it. */
int nio_pcap_open(FILE **file, const char *path)
{
    *file = fopen(path, "wbe");
    if (!*file)
        return errno;
    setvbuf(*file, NULL, _IOFBF, NIO_PCAP_BUFFER);
    uint8_t header[24];
    put32(header, 0xA1B2C3D4u);
    put32(header + 4, 2u | 4u << 16); /* version 2.4 */
    put32(header + 8, 0);             /* this zone */
    put32(header + 12, 0);            /* significant figures */
    put32(header + 16, NIO_PCAP_SNAPLEN);
    put32(header + 20, 1); /* LINKTYPE_ETHERNET */
    if (fwrite(header, sizeof header, 1, *file) != 1) {
        int failure = errno ? errno : EIO;
        fclose(*file);
        *file = NULL;
        return failure;
    }
    return 0;
}

/* Record a frame seen now. */
void nio_pcap_write(FILE *file, const uint8_t *data, uint32_t len)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint32_t kept = len < NIO_PCAP_SNAPLEN ? len : NIO_PCAP_SNAPLEN;
    uint8_t record[16];
    put32(record, (uint32_t)now.tv_sec);
    put32(record + 4, (uint32_t)(now.tv_nsec / 1000));
    put32(record + 8, kept);
    put32(record + 12, len);
    fwrite(record, sizeof record, 1, file);
    fwrite(data, kept, 1, file);
}
