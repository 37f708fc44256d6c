/* Linux interfaces Glibc's Swift module leaves out (they need _GNU_SOURCE or live in headers it
   does not import). Header only: nothing to link. */
#ifndef BESSD_CLINUX_SHIM_H
#define BESSD_CLINUX_SHIM_H
#include <errno.h>
#include <malloc.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timex.h>

extern long syscall(long number, ...);

/* Waits until `fd` is readable or `timeout_ns` has passed: ppoll(2) on one descriptor with the
   thread's signal mask unchanged, through the system call itself (the C library declares ppoll only
   under _GNU_SOURCE, and its header would bring pollfd and timespec into this module). Returns
   > 0 when readable, 0 at the timeout, -1 with errno (EINTR) otherwise. */
static inline int bessd_wait_readable(int fd, long long timeout_ns) {
    struct { int fd; short events; short revents; } p = { fd, 0x001 /* POLLIN */, 0 };
    struct { long tv_sec; long tv_nsec; } t = { (long)(timeout_ns / 1000000000LL), (long)(timeout_ns % 1000000000LL) };
    return (int)syscall(SYS_ppoll, &p, 1UL, &t, (void *)0, 0UL);
}

/* The kernel's NTP state, changing nothing: adjtimex(2) with modes 0. Returns 1 synchronised, 0 not
   (TIME_ERROR or STA_UNSYNC: nothing has disciplined the clock), -1 with errno when the call is not
   allowed (systemd's ProtectClock= refuses it with EPERM). */
static inline int bessd_clock_synchronized(void) {
    struct timex t = {0};
    int state = adjtimex(&t);
    if (state < 0) return -1;
    return (state == TIME_ERROR || (t.status & STA_UNSYNC)) ? 0 : 1;
}
/* Caps glibc's malloc arenas at `count` (mallopt M_ARENA_MAX); call before threads start.
   Returns 1 on success. */
static inline int bessd_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}
/* epoll(7) through the system calls themselves: <sys/epoll.h> brings <sys/types.h> and the pthread
   types into this module, and a module that uses those types without importing this one then no
   longer builds (MemberImportVisibility). The event's layout is the kernel's: packed on x86_64. */
struct bessd_epoll_event {
    unsigned int events;
    unsigned long long data;
}
#if defined(__x86_64__)
__attribute__((packed))
#endif
;
static inline int bessd_epoll_create(void) {
    return (int)syscall(SYS_epoll_create1, 02000000 /* EPOLL_CLOEXEC */);
}
/* op: 1 add, 2 delete, 3 modify. */
static inline int bessd_epoll_ctl(int epoll, int op, int fd, struct bessd_epoll_event *event) {
    return (int)syscall(SYS_epoll_ctl, epoll, op, fd, event);
}
/* epoll_pwait with no signal mask: the call every architecture has. */
static inline int bessd_epoll_wait(int epoll, struct bessd_epoll_event *events, int capacity, int timeout_ms) {
    return (int)syscall(SYS_epoll_pwait, epoll, events, capacity, timeout_ms, (void *)0, 8UL);
}

/* The calling thread's CPU affinity, CPUs 0-1023 as 16 64-bit words (sched_getaffinity(2) and
   sched_setaffinity(2) through the system calls: the C library declares them only under _GNU_SOURCE).
   Returns 0, or -1 with errno. */
static inline int bessd_thread_affinity(unsigned long long mask[16]) {
    for (int i = 0; i < 16; i++) mask[i] = 0;
    return syscall(SYS_sched_getaffinity, 0, 128UL, mask) < 0 ? -1 : 0;
}
/* Pins the calling thread to `cpu` (0-1023). Returns 0, or -1 with errno (EINVAL: not a CPU this
   process may use). */
static inline int bessd_pin_thread(int cpu) {
    unsigned long long mask[16] = {0};
    if (cpu < 0 || cpu >= 1024) { errno = EINVAL; return -1; }
    mask[cpu / 64] = 1ULL << (cpu % 64);
    return (int)syscall(SYS_sched_setaffinity, 0, 128UL, mask);
}
/* The calling thread's id (gettid(2)), as /proc/PID/task/TID names it. */
static inline int bessd_thread_id(void) { return (int)syscall(SYS_gettid); }
/* Names the calling thread (prctl PR_SET_NAME: at most 15 bytes show, in ps -L, top -H and
   /proc/PID/task/TID/comm). */
static inline int bessd_name_thread(const char *name) {
    return (int)syscall(SYS_prctl, 15 /* PR_SET_NAME */, name, 0UL, 0UL, 0UL);
}

#endif
