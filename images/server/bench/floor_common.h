/* What both floors share (floor.c: epoll; floor_uring.c: io_uring): the canned answers, the request scan that
 * counts "\r\n\r\n" across reads and reads nothing but an 8 KiB file's number, the 8 KiB table, the listener.
 * Included once, by one floor: everything here is static. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n"
#define HEAD_CLOSE "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"
#define BODY_LEN 100
#define HEAD8K "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 8192\r\n\r\n"
#define HEAD8K_CLOSE \
    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 8192\r\nConnection: close\r\n\r\n"
#define SET_COUNT 1000
#define SET_SIZE 8192
#define SET_PREFIX "GET /8k/" /* then four digits: the file's number */
#define TARGET_LEN 12         /* strlen(SET_PREFIX) + 4 */
#define ENTRY (sizeof(HEAD8K) - 1 + SET_SIZE)
#define MAXFD 70000
#define BURST 256 /* answers per write (each takes at most two iovecs; IOV_MAX is 1024) */

/* per connection: how many bytes of "\r\n\r\n" matched at the end of the previous read, and the first bytes of a
 * request cut by the end of a read (matched case-sensitively, as wrk sends it) */
static unsigned char matched[MAXFD];
static unsigned char carried_len[MAXFD];
static char carried[MAXFD][TARGET_LEN];

static const char *close_hdr = "Connection: close";
/* BURST 100-byte answers back to back (n pipelined answers are one range of it), and the closing one */
static char resp[BURST * (sizeof(HEAD) + BODY_LEN)], close_resp[sizeof(HEAD_CLOSE) + BODY_LEN];
static size_t rlen, clen;
static char *table;       /* in memory: SET_COUNT entries of HEAD8K + body, back to back */
static int table_fd = -1; /* sendfile: the same table in a sealed memfd */

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* The file number a request asks for, from its first n bytes; -1 when it is not "GET /8k/NNNN". */
static int target(const char *p, size_t n) {
    if (n < TARGET_LEN || memcmp(p, SET_PREFIX, sizeof(SET_PREFIX) - 1) != 0) return -1;
    int idx = 0;
    for (size_t k = sizeof(SET_PREFIX) - 1; k < TARGET_LEN; k++) {
        if (p[k] < '0' || p[k] > '9') return -1;
        idx = idx * 10 + (p[k] - '0');
    }
    return idx < SET_COUNT && (table || table_fd >= 0) ? idx : -1;
}

/* Counts the requests that end in buf[0..r) (a read from fd), continuing the scan the previous read left; writes
 * each one's answer (file number, or -1 for the 100-byte answer) to answer[] and returns how many. answer needs
 * r / 4 + 1 entries. */
static int scan(int fd, const char *buf, ssize_t r, short *answer) {
    int reqs = 0, m = matched[fd], cl = carried_len[fd];
    ssize_t start = 0; /* where the request being scanned began in buf (0 with a carried head) */
    for (ssize_t k = 0; k < r; k++) {
        char want = (m & 1) ? '\n' : '\r';
        if (buf[k] == want) {
            if (++m == 4) {
                if (cl > 0) { /* the request began in an earlier read: join its head with this read's bytes */
                    char head[TARGET_LEN];
                    size_t more = min_sz(TARGET_LEN - cl, k + 1);
                    memcpy(head, carried[fd], cl);
                    memcpy(head + cl, buf, more);
                    answer[reqs++] = target(head, cl + more);
                    cl = 0;
                } else {
                    answer[reqs++] = target(buf + start, k + 1 - start);
                }
                m = 0;
                start = k + 1;
            }
        } else {
            m = buf[k] == '\r' ? 1 : 0;
        }
    }
    if (start < r) { /* a request cut by the end of the read: keep its first bytes */
        size_t more = min_sz(r - start, TARGET_LEN - cl);
        memcpy(carried[fd] + cl, buf + start, more);
        cl += more;
    }
    matched[fd] = m;
    carried_len[fd] = cl;
    return reqs;
}

/* A new connection on fd starts with no scan state. */
static void reset_conn(int fd) {
    matched[fd] = 0;
    carried_len[fd] = 0;
}

/* Reads SETDIR/0000.bin … 0999.bin into the answer table: in memory, or in a sealed memfd (sendfile). */
static int load_set(const char *dir, int use_sendfile) {
    char *t = malloc((size_t)SET_COUNT * ENTRY);
    if (!t) return -1;
    for (int i = 0; i < SET_COUNT; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%04d.bin", dir, i);
        char *entry = t + (size_t)i * ENTRY;
        memcpy(entry, HEAD8K, sizeof(HEAD8K) - 1);
        FILE *f = fopen(path, "rb");
        if (!f || fread(entry + sizeof(HEAD8K) - 1, 1, SET_SIZE, f) != SET_SIZE) {
            fprintf(stderr, "%s: need %d bytes\n", path, SET_SIZE);
            return -1;
        }
        fclose(f);
    }
    if (!use_sendfile) {
        table = t;
        return 0;
    }
    int mfd = memfd_create("floor-8k-set", MFD_ALLOW_SEALING);
    size_t total = (size_t)SET_COUNT * ENTRY;
    for (size_t off = 0; mfd >= 0 && off < total;) {
        ssize_t w = write(mfd, t + off, total - off);
        if (w <= 0) return -1;
        off += w;
    }
    if (mfd < 0 || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        perror("memfd");
        return -1;
    }
    free(t); /* the bodies are held once: in the memfd */
    table_fd = mfd;
    return 0;
}

/* Fills the canned 100-byte answers from BODYFILE's first 100 bytes; 0, or -1 (said on stderr). */
static int load_answers(const char *body_file) {
    char body[BODY_LEN];
    FILE *bf = fopen(body_file, "rb");
    if (!bf || fread(body, 1, BODY_LEN, bf) != BODY_LEN) {
        fprintf(stderr, "%s: need %d bytes of body\n", body_file, BODY_LEN);
        return -1;
    }
    fclose(bf);
    rlen = sizeof(HEAD) - 1 + BODY_LEN;
    clen = sizeof(HEAD_CLOSE) - 1 + BODY_LEN;
    memcpy(resp, HEAD, sizeof(HEAD) - 1);
    memcpy(resp + sizeof(HEAD) - 1, body, BODY_LEN);
    for (int i = 1; i < BURST; i++) memcpy(resp + i * rlen, resp, rlen);
    memcpy(close_resp, HEAD_CLOSE, sizeof(HEAD_CLOSE) - 1);
    memcpy(close_resp + sizeof(HEAD_CLOSE) - 1, body, BODY_LEN);
    return 0;
}

/* The listener on 127.0.0.1:port; accepts deferred until a connection's first bytes arrive (TCP_DEFER_ACCEPT), so
 * a new connection wakes the loop once, not once for the handshake and again for the request. -1 on error. */
static int floor_listen(int port, int flags) {
    int ls = socket(AF_INET, SOCK_STREAM | flags, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(ls, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("bind/listen");
        return -1;
    }
    return ls;
}
