/* The benchmark's floor: the cheapest possible HTTP/1.1 responder, a limit reference and not a server.
 * One thread, one epoll loop (edge-triggered), non-blocking sockets. It never parses: every "\r\n\r\n" seen in
 * the input ends one request and is answered with the same canned 200 response carrying a 100-byte body.
 * All the answers to one read go out in one write (pipelining costs one syscall per burst). A request that
 * contains "Connection: close" anywhere is answered and the connection is closed. A new connection is read
 * at once after accept (the request usually came with it) and only joins epoll if it stays open. The
 * listener defers accepts until a connection's first bytes arrive (TCP_DEFER_ACCEPT), so a new connection
 * wakes the loop once, not once for the handshake and again for the request; no other setsockopt: every
 * burst of answers is one write, so Nagle never holds anything back.
 * Usage: floor PORT BODYFILE   (listens on 127.0.0.1:PORT; the body is BODYFILE's first 100 bytes, so the
 * harness can check it byte for byte like every server). Built by the harness: gcc -O2 -o floor floor.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n"
#define HEAD_CLOSE "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"
#define BODY_LEN 100
#define MAXFD 70000
#define BURST 256 /* answers per write; more pipelined requests in one read take another write */

/* per connection: how many bytes of "\r\n\r\n" matched at the end of the previous read, and whether it asked to
 * close (matched case-sensitively, as wrk sends it) */
static unsigned char matched[MAXFD];

static const char *close_hdr = "Connection: close";
static char buf[65536], resp[BURST * (sizeof(HEAD) + BODY_LEN)], close_resp[sizeof(HEAD_CLOSE) + BODY_LEN];
static size_t rlen, clen;

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
        int reqs = 0, m = matched[fd];
        for (ssize_t k = 0; k < r; k++) { /* count "\r\n\r\n" across reads */
            char want = (m & 1) ? '\n' : '\r';
            if (buf[k] == want) {
                if (++m == 4) {
                    reqs++;
                    m = 0;
                }
            } else {
                m = buf[k] == '\r' ? 1 : 0;
            }
        }
        matched[fd] = m;
        int want_close = reqs > 0 && memmem(buf, r, close_hdr, strlen(close_hdr)) != NULL;
        while (reqs > 0) {
            int k = reqs > BURST ? BURST : reqs;
            if (want_close && k == reqs) {
                /* the last answer of this read says "Connection: close" */
                memcpy(buf, resp, (k - 1) * rlen);
                memcpy(buf + (k - 1) * rlen, close_resp, clen);
                if (write(fd, buf, (k - 1) * rlen + clen) < 0) done = 1;
            } else if (write(fd, resp, k * rlen) < 0) {
                done = 1; /* a full socket buffer would need queueing; wrk never gets that far behind */
            }
            reqs -= k;
        }
        if (want_close) done = 1;
        if (done || r < (ssize_t)sizeof buf) break;
    }
    return done;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT BODYFILE\n", argv[0]);
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
    static char one_resp[sizeof(HEAD) + BODY_LEN];
    rlen = sizeof(HEAD) - 1 + BODY_LEN;
    clen = sizeof(HEAD_CLOSE) - 1 + BODY_LEN;
    memcpy(one_resp, HEAD, sizeof(HEAD) - 1);
    memcpy(one_resp + sizeof(HEAD) - 1, body, BODY_LEN);
    memcpy(close_resp, HEAD_CLOSE, sizeof(HEAD_CLOSE) - 1);
    memcpy(close_resp + sizeof(HEAD_CLOSE) - 1, body, BODY_LEN);
    for (int i = 0; i < BURST; i++) memcpy(resp + i * rlen, one_resp, rlen);

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
