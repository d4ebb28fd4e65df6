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
 * 100-byte answer). Built by the harness: gcc -O2 -o floor floor.c. The request scan, the canned answers and the
 * table are shared with floor_uring.c, the same floor on io_uring (floor_common.h).
 */
#include "floor_common.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

static char buf[65536];
static short answer[sizeof buf / 4 + 1]; /* per request of one read: file number, or -1 for the 100-byte answer */

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
        int reqs = scan(fd, buf, r, answer);
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

int main(int argc, char **argv) {
    int use_sendfile = argc > 1 && strcmp(argv[1], "--sendfile") == 0;
    argv += use_sendfile, argc -= use_sendfile;
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s [--sendfile] PORT BODYFILE [SETDIR]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (load_answers(argv[2]) < 0) return 1;
    if (argc == 4 && load_set(argv[3], use_sendfile) < 0) return 1;
    int ls = floor_listen(atoi(argv[1]), SOCK_NONBLOCK);
    if (ls < 0) return 1;
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
                    reset_conn(c);
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
