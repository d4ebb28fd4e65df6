/* The floor on io_uring: the same canned answers as floor.c (floor_common.h) with the kernel's other interface, to
 * measure whether io_uring lowers the per-request cost on this kernel below what any epoll server pays (issue 13:
 * "make the kernel do less per request"). One thread, one ring, and per loop iteration one io_uring_enter that both
 * submits every answer queued since the last and waits for the next completions:
 *   - one multishot accept on the listener (TCP_DEFER_ACCEPT as floor.c: a connection arrives with its request);
 *   - one multishot receive per connection into a ring of provided buffers (no read per request, no re-arm);
 *   - answers as sends of the canned bytes (they live for the whole run, so no buffer waits for a send); the answers
 *     to one receive are one chain of linked sends (contiguous 100-byte answers are one send), so they leave in
 *     order, and only the chain's last send posts a completion; a connection's next chain starts when its last
 *     ended (a pipelining client); MSG_WAITALL makes the kernel finish a short send itself;
 *   - "Connection: close": the chain ends with a shutdown of the sending side; the fd is closed once the chain
 *     ended and the receive ended (the client closes after the answer).
 * The ring is single-issuer with deferred task work (completions are processed only inside io_uring_enter: no
 * interrupting task work). 8 KiB bodies are sent from memory (io_uring has no sendfile; like floor.c's writev).
 *
 * Usage: floor_uring PORT BODYFILE [SETDIR]   (as floor.c). Built by the harness: gcc -O2 floor_uring.c -luring
 * Exits 3 when the kernel or the seccomp profile refuses io_uring.
 */
#include "floor_common.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>

#define RING_ENTRIES 4096
#define BUF_COUNT 4096 /* provided receive buffers (a power of two) */
#define BUF_SIZE 4096
#define BGID 0

enum op { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_CHAIN_END, OP_CLOSE };

static struct io_uring ring;
static struct io_uring_buf_ring *bufring;
static char *bufs;
static int returned; /* buffers handed back to the ring since the last advance */
static int listener;
static short answer[BUF_SIZE / 4 + 1];
/* Per connection. Answers go out as one linked chain per receive, so they leave in order; a receive that arrives
 * while its connection's chain is still in flight (a pipelining client, a full socket buffer) waits in `queued`
 * until the chain ends, or the next chain could overtake it. The fd is closed only once its receive ended and no
 * chain is in flight: a linked request takes its fd when it runs, so one still queued when the fd is closed and
 * reused by the next accept would write to (or shut down) the next connection. */
struct conn {
    unsigned char inflight, ended, queued_close;
    int queued_n, queued_cap;
    short *queued; /* allocated only for a connection that ever had to wait */
};
static struct conn conns[MAXFD];
#define CHAIN_MAX 512 /* answers per chain: at most 2 submissions each, well inside the ring */

static __u64 tag(enum op op, int fd) { return (__u64)op << 32 | (__u32)fd; }

/* A submission slot; when the queue is full, what is queued goes to the kernel first. */
static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    if (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    return s;
}

static void arm_accept(void) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_multishot_accept(s, listener, NULL, NULL, 0);
    io_uring_sqe_set_data64(s, tag(OP_ACCEPT, listener));
}

static void arm_recv(int fd) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BGID;
    io_uring_sqe_set_data64(s, tag(OP_RECV, fd));
}

static void close_fd(int fd) {
    struct conn *c = &conns[fd];
    c->ended = c->queued_close = 0;
    c->queued_n = 0;
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_close(s, fd);
    s->flags |= IOSQE_CQE_SKIP_SUCCESS;
    io_uring_sqe_set_data64(s, tag(OP_CLOSE, fd));
}

/* Queues one send of p[0..n): linked to what follows unless it ends the chain, and then it posts a completion. */
static void send_bytes(int fd, const char *p, size_t n, int last) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_send(s, fd, p, n, MSG_WAITALL | MSG_NOSIGNAL);
    s->flags |= last ? 0 : IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
    io_uring_sqe_set_data64(s, tag(last ? OP_CHAIN_END : OP_SEND, fd));
}

/* Sends the answers ans[0..n) (n <= CHAIN_MAX) as one chain, the last closing the connection when last_close:
 * contiguous 100-byte answers are one send, an 8 KiB answer one more, a close ends with a shutdown of the sending
 * side. */
static void chain(int fd, const short *ans, int n, int last_close) {
    if (io_uring_sq_space_left(&ring) < (unsigned)(2 * n + 2)) io_uring_submit(&ring); /* never split a chain */
    const char *run = NULL; /* pending contiguous range: 100-byte answers from resp, or one 8 KiB entry */
    size_t run_len = 0;
    for (int i = 0; i < n; i++) {
        int idx = ans[i], closing = last_close && i == n - 1;
        const char *p;
        size_t len;
        if (idx < 0) {
            if (!closing && run == resp && run_len + rlen <= sizeof resp) { /* consecutive 100-byte answers */
                run_len += rlen;
                continue;
            }
            p = closing ? close_resp : resp;
            len = closing ? clen : rlen;
        } else {
            p = table + (size_t)idx * ENTRY;
            len = ENTRY;
        }
        if (run) send_bytes(fd, run, run_len, 0);
        if (idx >= 0 && closing) { /* the closing header, then the body */
            send_bytes(fd, HEAD8K_CLOSE, sizeof(HEAD8K_CLOSE) - 1, 0);
            p += sizeof(HEAD8K) - 1;
            len = SET_SIZE;
        }
        run = p, run_len = len;
    }
    send_bytes(fd, run, run_len, !last_close);
    if (last_close) {
        struct io_uring_sqe *s = sqe_get();
        io_uring_prep_shutdown(s, fd, SHUT_WR);
        io_uring_sqe_set_data64(s, tag(OP_CHAIN_END, fd));
    }
    conns[fd].inflight = 1;
}

/* Starts the next chain from what waits, if anything does. */
static void next_chain(int fd) {
    struct conn *c = &conns[fd];
    if (c->queued_n == 0) return;
    int n = c->queued_n < CHAIN_MAX ? c->queued_n : CHAIN_MAX;
    chain(fd, c->queued, n, c->queued_close && n == c->queued_n);
    memmove(c->queued, c->queued + n, (c->queued_n - n) * sizeof(short));
    c->queued_n -= n;
}

/* Answers ans[0..n) after everything already queued for fd. */
static void respond(int fd, const short *ans, int n, int last_close) {
    struct conn *c = &conns[fd];
    if (!c->inflight && n <= CHAIN_MAX) {
        chain(fd, ans, n, last_close);
        return;
    }
    if (c->queued_n + n > c->queued_cap) {
        c->queued_cap = (c->queued_n + n) * 2;
        c->queued = realloc(c->queued, c->queued_cap * sizeof(short));
        if (!c->queued) abort();
    }
    memcpy(c->queued + c->queued_n, ans, n * sizeof(short));
    c->queued_n += n;
    c->queued_close = last_close;
    if (!c->inflight) next_chain(fd);
}

/* A chain ended (its last send or its shutdown completed, failed or was cancelled). */
static void on_chain_end(int fd) {
    struct conn *c = &conns[fd];
    c->inflight = 0;
    if (c->ended) {
        close_fd(fd);
    } else {
        next_chain(fd);
    }
}

/* The receive side ended (end of stream, or an error): close now, or when the chain in flight ends. */
static void on_end(int fd) {
    conns[fd].ended = 1;
    conns[fd].queued_n = 0; /* nobody is left to read them */
    if (!conns[fd].inflight) close_fd(fd);
}

/* One receive completion: answer what arrived, hand the buffer back, re-arm when the multishot ended. */
static void on_recv(int fd, struct io_uring_cqe *cqe) {
    if (cqe->res > 0) {
        int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        char *data = bufs + (size_t)bid * BUF_SIZE;
        int reqs = scan(fd, data, cqe->res, answer);
        int want_close = reqs > 0 && memmem(data, cqe->res, close_hdr, strlen(close_hdr)) != NULL;
        if (reqs > 0) respond(fd, answer, reqs, want_close);
        /* the answers are canned bytes: the buffer is free as soon as it is scanned */
        io_uring_buf_ring_add(bufring, data, BUF_SIZE, bid, io_uring_buf_ring_mask(BUF_COUNT), returned++);
        if (!(cqe->flags & IORING_CQE_F_MORE)) arm_recv(fd);
        return;
    }
    if (cqe->res == -ENOBUFS && !(cqe->flags & IORING_CQE_F_MORE)) { /* every buffer was in use: try again */
        arm_recv(fd);
        return;
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) on_end(fd); /* end of stream, or an error */
}

static int setup(void) {
    struct io_uring_params p = {0};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = RING_ENTRIES * 4;
    int rc = io_uring_queue_init_params(RING_ENTRIES, &ring, &p);
    if (rc < 0) {
        fprintf(stderr, "io_uring_setup: %s (kernel or seccomp profile refuses io_uring)\n", strerror(-rc));
        return -1;
    }
    io_uring_register_ring_fd(&ring); /* io_uring_enter without an fd lookup; an old kernel just does not */
    size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
    bufring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bufs = malloc((size_t)BUF_COUNT * BUF_SIZE);
    if (bufring == MAP_FAILED || !bufs) return -1;
    struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)bufring, .ring_entries = BUF_COUNT, .bgid = BGID};
    if ((rc = io_uring_register_buf_ring(&ring, &reg, 0)) < 0) {
        fprintf(stderr, "io_uring_register_buf_ring: %s\n", strerror(-rc));
        return -1;
    }
    io_uring_buf_ring_init(bufring);
    for (int i = 0; i < BUF_COUNT; i++)
        io_uring_buf_ring_add(bufring, bufs + (size_t)i * BUF_SIZE, BUF_SIZE, i, io_uring_buf_ring_mask(BUF_COUNT), i);
    io_uring_buf_ring_advance(bufring, BUF_COUNT);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s PORT BODYFILE [SETDIR]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (load_answers(argv[2]) < 0) return 1;
    if (argc == 4 && load_set(argv[3], 0) < 0) return 1;
    if ((listener = floor_listen(atoi(argv[1]), 0)) < 0) return 1;
    if (setup() < 0) return 3;
    arm_accept();
    for (;;) {
        int rc = io_uring_submit_and_wait(&ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            fprintf(stderr, "io_uring_enter: %s\n", strerror(-rc));
            return 1;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            __u64 data = io_uring_cqe_get_data64(cqe);
            int fd = (int)(__u32)data;
            switch ((enum op)(data >> 32)) {
            case OP_ACCEPT:
                if (cqe->res >= 0 && cqe->res < MAXFD) {
                    reset_conn(cqe->res);
                    arm_recv(cqe->res);
                } else if (cqe->res >= 0) {
                    close(cqe->res);
                }
                if (!(cqe->flags & IORING_CQE_F_MORE)) arm_accept();
                break;
            case OP_RECV:
                on_recv(fd, cqe);
                break;
            case OP_CHAIN_END:
                on_chain_end(fd);
                break;
            default: /* a failed send or close: the receive side ends the connection */
                break;
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (returned) {
            io_uring_buf_ring_advance(bufring, returned);
            returned = 0;
        }
    }
}
