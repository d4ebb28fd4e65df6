/* The benchmark's floor: the cheapest possible HTTP/1.1 responder, a limit reference and not a server.
 * One thread, one epoll loop (edge-triggered), non-blocking sockets. It barely parses: every "\r\n\r\n" seen in
 * the input ends one request. A request that starts with "GET /8k/NNNN" (the benchmark's 8 KiB set, four digits
 * at a fixed offset: the only parsing there is) is answered with a canned 200 header and that file's 8,192 bytes;
 * anything else with the same canned 200 carrying the 100-byte body. All the answers to one read go out in one
 * writev (pipelining costs one syscall per burst). A request that contains "Connection: close" anywhere is
 * answered and the connection is closed. A new connection is read at once after accept (the request usually came
 * with it) and only joins epoll if it stays open. The listener defers accepts until a connection's first bytes
 * arrive (TCP_DEFER_ACCEPT), so a new connection wakes the loop once, not once for the handshake and again for
 * the request; no other setsockopt: every burst of answers is one write, so Nagle never holds anything back.
 *
 * 8 KiB answers, header and body, are laid out back to back in one table read at start, so an answer is one
 * contiguous range. How they reach the socket is the command line's choice (the floor must show the cheaper
 * mechanism on this kernel, see README.md):
 *   (default)   writev from the table in memory: the kernel copies the body into the socket (as our server does);
 *   --sendfile  sendfile from one sealed memfd holding the same table: the body pages go to the socket by
 *               reference, no user-to-kernel copy (nginx's way), one sendfile per 8 KiB answer.
 * A full socket buffer is waited out with poll (the loop stalls for that connection): wrk, one request in flight
 * per connection, never gets there; only a client that pipelines many 8 KiB requests does.
 *
 * Usage: floor [--sendfile] PORT BODYFILE [SETDIR]   (listens on 127.0.0.1:PORT; the 100-byte body is BODYFILE's
 * first 100 bytes; SETDIR holds 0000.bin … 0999.bin of 8,192 bytes each: without it every request gets the
 * 100-byte answer). Built by the harness: gcc -O2 -o floor floor.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
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
#define BURST 256 /* answers per writev (each takes at most two iovecs; IOV_MAX is 1024) */

/* per connection: how many bytes of "\r\n\r\n" matched at the end of the previous read, and the first bytes of a
 * request cut by the end of a read (matched case-sensitively, as wrk sends it) */
static unsigned char matched[MAXFD];
static unsigned char carried_len[MAXFD];
static char carried[MAXFD][TARGET_LEN];

static const char *close_hdr = "Connection: close";
static char buf[65536];
static short answer[sizeof buf / 4 + 1]; /* per request of one read: file number, or -1 for the 100-byte answer */
static char resp[BURST * (sizeof(HEAD) + BODY_LEN)], close_resp[sizeof(HEAD_CLOSE) + BODY_LEN];
static size_t rlen, clen;
static char *table;   /* writev: SET_COUNT entries of HEAD8K + body, back to back */
static int table_fd = -1; /* sendfile: the same table in a sealed memfd */

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

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Waits until fd can take more bytes; 0 when it can, -1 on error. */
static int wait_writable(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 10000) == 1 && !(p.revents & (POLLERR | POLLHUP)) ? 0 : -1;
}

/* Writes every byte of iov[0..n) (the array is consumed); 0, or -1 on error. */
static int writev_all(int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN && wait_writable(fd) == 0) continue;
            if (errno == EINTR) continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) w -= iov++->iov_len, n--;
        if (n > 0) iov->iov_base = (char *)iov->iov_base + w, iov->iov_len -= w;
    }
    return 0;
}

/* Sends len bytes of the memfd table from off; 0, or -1 on error. */
static int sendfile_all(int fd, off_t off, size_t len) {
    while (len > 0) {
        ssize_t w = sendfile(fd, table_fd, &off, len);
        if (w < 0) {
            if (errno == EAGAIN && wait_writable(fd) == 0) continue;
            if (errno == EINTR) continue;
            return -1;
        }
        len -= w;
    }
    return 0;
}

/* Answers ans[0..n) (n <= BURST); the last one says "Connection: close" when last_close. 0, or -1 on error. */
static int respond(int fd, const short *ans, int n, int last_close) {
    struct iovec iov[2 * BURST];
    int k = 0, run = 0; /* run: the last iovec is that many 100-byte answers, contiguous in resp */
    for (int i = 0; i < n; i++) {
        int idx = ans[i], closing = last_close && i == n - 1;
        if (idx < 0 && !closing) { /* consecutive 100-byte answers are one range of resp, as before the 8 KiB set */
            if (run > 0) {
                iov[k - 1].iov_len += rlen;
            } else {
                iov[k++] = (struct iovec){resp, rlen};
            }
            run++;
            continue;
        }
        run = 0;
        if (idx < 0) {
            iov[k++] = (struct iovec){close_resp, clen};
            continue;
        }
        if (table_fd >= 0) { /* flush what is queued, then the body goes by reference */
            off_t off = (off_t)idx * ENTRY;
            size_t len = ENTRY;
            if (closing) {
                iov[k++] = (struct iovec){HEAD8K_CLOSE, sizeof(HEAD8K_CLOSE) - 1};
                off += sizeof(HEAD8K) - 1;
                len = SET_SIZE;
            }
            if (writev_all(fd, iov, k) < 0 || sendfile_all(fd, off, len) < 0) return -1;
            k = 0;
            continue;
        }
        char *entry = table + (size_t)idx * ENTRY;
        if (closing) {
            iov[k++] = (struct iovec){HEAD8K_CLOSE, sizeof(HEAD8K_CLOSE) - 1};
            iov[k++] = (struct iovec){entry + sizeof(HEAD8K) - 1, SET_SIZE};
        } else {
            iov[k++] = (struct iovec){entry, ENTRY};
        }
    }
    return writev_all(fd, iov, k);
}

/* Reads what is there and answers every complete request; returns 1 when the connection is to be closed. */
static int serve(int fd) {
    int done = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            done = 1;
            break;
        }
        if (r < 0) break;
        int reqs = 0, m = matched[fd], cl = carried_len[fd];
        ssize_t start = 0; /* where the request being scanned began in buf (0 with a carried head) */
        for (ssize_t k = 0; k < r; k++) { /* count "\r\n\r\n" across reads */
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
        int want_close = reqs > 0 && memmem(buf, r, close_hdr, strlen(close_hdr)) != NULL;
        for (int first = 0; first < reqs; first += BURST) {
            int k = reqs - first > BURST ? BURST : reqs - first;
            if (respond(fd, answer + first, k, want_close && first + k == reqs) < 0) {
                done = 1;
                break;
            }
        }
        if (want_close) done = 1;
        if (done || r < (ssize_t)sizeof buf) break;
    }
    return done;
}

/* Reads SETDIR/0000.bin … 0999.bin into the answer table: in memory (writev) or in a sealed memfd (sendfile). */
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

int main(int argc, char **argv) {
    int use_sendfile = argc > 1 && strcmp(argv[1], "--sendfile") == 0;
    argv += use_sendfile, argc -= use_sendfile;
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s [--sendfile] PORT BODYFILE [SETDIR]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char body[BODY_LEN];
    FILE *bf = fopen(argv[2], "rb");
    if (!bf || fread(body, 1, BODY_LEN, bf) != BODY_LEN) {
        fprintf(stderr, "%s: need %d bytes of body\n", argv[2], BODY_LEN);
        return 1;
    }
    fclose(bf);
    if (argc == 4 && load_set(argv[3], use_sendfile) < 0) return 1;
    rlen = sizeof(HEAD) - 1 + BODY_LEN;
    clen = sizeof(HEAD_CLOSE) - 1 + BODY_LEN;
    memcpy(resp, HEAD, sizeof(HEAD) - 1);
    memcpy(resp + sizeof(HEAD) - 1, body, BODY_LEN);
    for (int i = 1; i < BURST; i++) memcpy(resp + i * rlen, resp, rlen);
    memcpy(close_resp, HEAD_CLOSE, sizeof(HEAD_CLOSE) - 1);
    memcpy(close_resp + sizeof(HEAD_CLOSE) - 1, body, BODY_LEN);

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(ls, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[512];
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    for (;;) {
        int n = epoll_wait(ep, evs, 512, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == ls) {
                int c;
                while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (c >= MAXFD) {
                        close(c);
                        continue;
                    }
                    matched[c] = 0;
                    carried_len[c] = 0;
                    /* the request usually came with the connection: answer it before any epoll_ctl */
                    if (serve(c)) {
                        close(c);
                        continue;
                    }
                    struct epoll_event ce = {.events = EPOLLIN | EPOLLET, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            if (serve(fd)) close(fd); /* close() also removes it from epoll */
        }
    }
}
