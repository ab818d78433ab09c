/* spawner: start a trial's commands from inside its box, on proctor's request.

   spawner CONTROL_FD UID GID

   PID 1 of every box (sandbox/namespaces.py), and the only way into it. proctor talks to it
   over CONTROL_FD, a SOCK_SEQPACKET socket only the two of them hold; a command starts as a
   fork of a process already in the box, so no `nsenter` and no wrapper process is needed per
   command. Each request is one struct req, with at most MAX_FDS descriptors in SCM_RIGHTS,
   and for RUN, LISTEN and OPEN its strings either in a request memfd (the first descriptor)
   or inline: up to MAX_INLINE bytes right after the struct, in the same message (then the
   memfd is left out of the descriptors below; inline strings with another op are refused;
   a tracer's order has them inline likewise). Anything shorter than a struct req
   or longer than both together is answered E EBADMSG with id 0. One handler per op:

     RUN      fds [request memfd, stdin, stdout, stderr]; the memfd holds exactly 1 + argc +
              envc NUL-terminated strings: cwd, argv, environment. The child gets a session
              of its own, those fds as 0-2 and nothing else, an address-space limit when
              as_mib is set, UID/GID (-1: keep the uid), no capabilities, no-new-privs and
              the keyring filter, then its cwd, then execs.
              Replies X (value: the command's wait status) when it ended; E (err) if no
              fork. Nothing when it starts: no message to wake proctor for (a KILL after a
              deadline gets the X of a command that started). A traced command is not the
              spawner's: it goes to a tracer (TRACER).
     TRACER   a tracer of the current trial is forked (exectrace.c's code: this program is
              built with it, exectrace.h), outside the trial's PID namespace, known by the
              request's id, and its end of a new socket sent back with reply N (err and no
              socket if none could be made). proctor gives it the trial's traced commands on
              that socket, one at a time, each a RUN request with FLAG_TRACE and a fifth fd
              that receives the trace (FLAG_CAPTURE, the tracer's variant: also what the
              processes write to fd 1 and 2, cap_per bytes per process and cap_total in all,
              exectrace -w). The tracer replies on CONTROL_FD, as the spawner does: X when
              the top ended (value: its wait status) and left something running, Z once the
              tree is gone (value: the same, if X did not say it; err: why the tracer
              could not start it, then it takes no other; else the tracer is idle again).
              When a tracer ends other than by proctor closing its socket (killed, or
              failed), reply D (id: the tracer's, value: its wait status), after all it
              said.
     KILL     sends `sig` to the process group of command `id`; with FLAG_TRACE, of tracer
              `id`. No reply.
     LISTEN   fds [memfd "host\0port\0"]: a listening TCP socket bound in the trial's network,
              sent back with reply L (E on failure): how proctor's forwarders get inside.
     NEWTRIAL the current trial's processes are killed; the commands started from now on get
              a new IPC namespace, and a new network namespace (only loopback, up) unless the
              current one counted nothing since it was made (nothing of a trial is in it).
              Reply T (value: 1 if the network namespace is new); then the new trial's
              PID namespace is made. With FLAG_TRACE, the PID namespace and the new trial's
              first tracer (as TRACER makes it, FLAG_CAPTURE its variant, known by this
              request's id) are made first, and T carries the tracer's socket.
     PING     reply P: every request sent before has been handled.
     KILLALL  every process of the trial is killed: reply A (value: how many there were) once
              all are gone.
     OPEN     fds [memfd "path\0"]; `sig` 0: open for reading, 1: O_PATH (to stat), 2: for
              reading if it is a regular file, else O_PATH (a stat and a read in one
              request; value: the errno of opening the file for reading, 0 if it was).
              The path is opened inside the box (its mounts, its symlinks) with the agent's
              file rights: as root with the agent's uid and gid as file system uid and gid
              (the spawner keeps no supplementary groups), never blocking on a FIFO. The
              descriptor comes back with reply O (E with errno: what the agent would get).

   Any other op, or a request whose fields or descriptors do not fit its op, is answered
   E EINVAL with its id and changes nothing.

   A trial's commands live in a PID namespace of their own, under an init (PID 1 there) that
   reaps whatever they orphan, with a /proc of that namespace: pids start afresh, the box's
   spawner is not there to be seen or signalled, and killing the init kills every process of
   the trial at once (KILLALL). It is made right after NEWTRIAL is answered (else by the
   trial's first command). IPC and network namespaces are renewed per trial (NEWTRIAL): no
   counter of /proc/net, no socket, no SysV IPC object or message queue outlives a trial.

   The spawner is not dumpable (no ptrace, no /proc/PID/fd, mem or environ for the agent)
   and, as root, runs as a uid the agent's commands never have. As the box's PID 1 it reaps
   whatever is orphaned there. When proctor goes, the socket reads EOF and the spawner
   exits, and with it the box.
   Signals other than SIGKILL/SIGSTOP are blocked. A failure to set a limit, drop a privilege
   or make the spawner undumpable ends the command (126) or the box: never a silent half. */

#define _GNU_SOURCE
#include "exectrace.h"  /* the tracer's code (exectrace.c, built with this file): trace_to,
                           filter_self, trace_tree */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef X32_BIT  /* aarch64 has no second ABI on the same numbers */
#define X32_BIT 0xffffffffu
#endif

enum { OP_RUN = 1, OP_KILL = 2, OP_LISTEN = 3, OP_NEWTRIAL = 4, OP_PING = 5, OP_KILLALL = 6,
       OP_OPEN = 7, OP_TRACER = 8 };

#define MAX_FDS 8                    /* descriptors accepted with one request */
#define MAX_REQUEST_BYTES (64u << 20) /* a request memfd larger than this is refused */
#define MAX_INLINE 16384u             /* a request's strings in its message: at most this */
#define INLINE_FD (-2)                /* in place of the memfd: the strings came inline */
#define MAX_STRINGS (1u << 20)       /* cwd + argv + environment */
#define FD_BOUND 65536               /* where close_range is missing: close up to this */
#define FLAG_TRACE 1u                /* a tracer's RUN: a fifth fd receives the trace */
#define FLAG_CAPTURE 2u              /* ... and what it writes to fd 1/2 (cap_per, cap_total) */

struct req { uint32_t op, id; int32_t sig; uint32_t argc, envc, as_mib, flags, cap_per, cap_total; };
struct rep { uint32_t kind, id; int32_t value, err; };

/* A command started (not traced: those are the tracers'); X is sent when `pid` is reaped. */
struct job { uint32_t id; pid_t pid; };
static struct job *jobs;
static size_t njobs, capjobs;

static int ctl = -1;
static char inline_buf[MAX_INLINE];  /* the current request's inline strings */
static size_t inline_len;           /* their length (0: none) */
static long agent_uid = -1, agent_gid = -1;
static int box_mnt = -1, box_pidns = -1;  /* the box's own namespaces (fds) */
static int box_proc = -1;                  /* the box's own /proc (the trials' is another) */
static int trial_pidns = -1;               /* the current trial's PID namespace (fd) */
static pid_t trial_init;                   /* the current trial's init, 0: none yet */
static pid_t *dying;                       /* killed inits not yet reaped */
static size_t ndying, capdying;
struct waiter { uint32_t id; int32_t killed; };
static struct waiter *waiters;             /* KILLALL requests answered when no init is dying */
static size_t nwaiters, capwaiters;

static void die(const char *what) {
    fprintf(stderr, "proctor spawner: %s: %s\n", what, strerror(errno));
    _exit(1);
}

/* Appends to a growing array of `size`-byte items; 0 on success, -1 if out of memory. */
static int grow(void **items, size_t *n, size_t *cap, size_t size) {
    if (*n < *cap) return 0;
    size_t want = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, want * size);
    if (!p) return -1;
    *items = p;
    *cap = want;
    return 0;
}

static void reply(uint32_t kind, uint32_t id, int32_t value, int32_t err, int fd) {
    struct rep r = {kind, id, value, err};
    struct iovec iov = {&r, sizeof r};
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof u.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    while (sendmsg(ctl, &msg, MSG_NOSIGNAL) < 0) {
        if (errno != EINTR) _exit(0);  /* proctor is gone: so is the box */
    }
}

static void fail(const struct req *r, int err) { reply('E', r->id, 0, err, -1); }

/* Descriptors low..high (high -1: all): close_range, else one loop up to FD_BOUND. */
static int close_from_to(int low, int high) {
    unsigned int last = high < 0 ? ~0u : (unsigned int)high;
    if (syscall(SYS_close_range, (unsigned int)low, last, 0) == 0) return 0;
    if (errno != ENOSYS) return -1;
    for (int fd = low; fd < FD_BOUND && (high < 0 || fd <= high); fd++) close(fd);
    return 0;
}

/* Every descriptor from `low` up but the `n` in `keep`. */
static int close_except(int low, const int *keep, size_t n) {
    for (int fd = low;;) {
        int next = -1;  /* the lowest kept descriptor from fd up */
        for (size_t i = 0; i < n; i++)
            if (keep[i] >= fd && (next < 0 || keep[i] < next)) next = keep[i];
        if (next < 0) return close_from_to(fd, -1);
        if (next > fd && close_from_to(fd, next - 1) < 0) return -1;
        fd = next + 1;
    }
}

/* A number argument of this program, whole and within [lo, hi]. */
static long number(const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "proctor spawner: bad number %s\n", s);
        exit(2);
    }
    return v;
}

/* The request memfd as exactly `n` NUL-terminated strings (pointers into `*buffer`); NULL
   if it is not a regular file of at most MAX_REQUEST_BYTES holding exactly that. */
static char **strings(int fd, size_t n, char **buffer) {
    struct stat st;
    size_t size;
    if (fd == INLINE_FD) {  /* the request's own (a copy, as from a memfd) */
        size = inline_len;
        if (n == 0 || n > MAX_STRINGS || size == 0) return NULL;
    } else {
        if (n == 0 || n > MAX_STRINGS || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            st.st_size <= 0 || (uint64_t)st.st_size > MAX_REQUEST_BYTES)
            return NULL;
        size = (size_t)st.st_size;
    }
    char *buf = malloc(size);
    if (!buf) return NULL;
    size_t got = fd == INLINE_FD ? size : 0;
    if (fd == INLINE_FD) memcpy(buf, inline_buf, size);
    while (got < size) {
        ssize_t k = pread(fd, buf + got, size - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { free(buf); return NULL; }
        got += (size_t)k;
    }
    char **out = calloc(n + 1, sizeof *out);
    if (!out || buf[size - 1] != 0) { free(out); free(buf); return NULL; }
    char *p = buf, *end = buf + size;
    for (size_t i = 0; i < n; i++) {
        if (p >= end) { free(out); free(buf); return NULL; }
        out[i] = p;
        p += strlen(p) + 1;
    }
    if (p != end) { free(out); free(buf); return NULL; }  /* more strings than said */
    *buffer = buf;
    return out;
}

/* Keyrings are per user, not per namespace: refuse them, so no two trials share one. Foreign
   system call ABIs (x32, int 0x80) are refused outright, so nothing goes around the filter. */
static int keyring_filter(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_add_key, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_request_key, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_keyctl, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* The bounding and ambient sets emptied, once, at the spawner's start: every process of the
   box is a fork of the spawner, and none it execs can gain a capability back (needs
   CAP_SETPCAP: before any uid change). Per command it cost 64 credential commits. */
static int drop_bounding_set(void) {
    for (int cap = 0; cap <= 63; cap++) {  /* up to the kernel's last (then EINVAL) */
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL && cap > CAP_LAST_CAP / 2) break;
            return -1;
        }
    }
    return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ? -1 : 0;
}

/* The permitted, effective and inheritable sets emptied. */
static int clear_capabilities(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    return (int)syscall(SYS_capset, &h, d);
}

/* In a command's child, before exec: on any failure it says why and exits 126. */
static void drop_privileges(int (*filter)(void)) {
    /* As root, uid 0 -> the agent's uid clears the permitted and effective sets (no
       SECBIT_KEEP_CAPS); in a user namespace the uid stays and capset does it. No bounding
       set and no supplementary groups come from the spawner (main). The system calls
       themselves, not libc's wrappers, which would apply the change to every thread they
       know of: a traced command's top shares the tracer's memory (top_main). */
    if (agent_uid >= 0 && (syscall(SYS_setresgid, agent_gid, agent_gid, agent_gid) < 0 ||
                           syscall(SYS_setresuid, agent_uid, agent_uid, agent_uid) < 0)) {
        dprintf(2, "proctor: dropping to the agent's uid: %s\n", strerror(errno));
        _exit(126);
    }
    if (clear_capabilities() < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        filter() < 0) {
        dprintf(2, "proctor: dropping privileges: %s\n", strerror(errno));
        _exit(126);
    }
}

/* ---- the trial's PID namespace ------------------------------------------------------- */

/* The last trial's /proc is not unmounted when the next one's is mounted: an unmount waits
   for an expedited RCU grace period (namespace_unlock), 0.4-3 ms on a busy 2-core VM, and a
   trial waited for one each time. It is moved instead (no wait) into a pile: a tmpfs on the
   box's own /proc/fs, under the trials' /proc where no path of theirs leads. Every PILE_SIZE
   trials the pile is unmounted at once, every /proc on it with it. A piled /proc is of a PID
   namespace whose processes are all dead. Where the pile cannot be made, each /proc is
   unmounted as before. */
#define PILE_SIZE 32
static int box_proc_here = -1;  /* O_PATH: the box's /proc in the trials' mount namespace */
static int piled = -1;          /* /procs on the pile; -1: no pile (none yet, or none here) */
static int pile_broken;

/* Moves the trial /proc on top at /proc onto the pile (made first if need be, unmounted
   first if full); 0, or -1 when it stays where it is. Paths are taken from the box's own
   /proc, whose root the trials' /procs cover: its "fs" leads to the pile. */
static int pile_last_proc(void) {
    char name[16];
    if (pile_broken || fchdir(box_proc_here) < 0) return -1;
    int ok = 1;
    if (piled >= PILE_SIZE) {
        ok = umount2("fs", MNT_DETACH) == 0;
        piled = -1;
    }
    if (ok && piled < 0) {
        ok = mount("proctor-pile", "fs", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "mode=700,size=16k") == 0;
        if (ok) piled = 0;
    }
    snprintf(name, sizeof name, "fs/%d", piled);
    ok = ok && mkdir(name, 0700) == 0 && mount("/proc", name, NULL, MS_MOVE, NULL) == 0;
    if (ok) piled++;
    else pile_broken = 1;  /* as before from now on: each /proc unmounted by the next init */
    if (chdir("/") < 0) die("back to /");
    return ok ? 0 : -1;
}

/* How an init that cannot set up its trial ends: nothing of stdio's (init_start). */
static void init_failed(const char *what) {
    dprintf(2, "proctor spawner: %s: %s\n", what, strerror(errno));
    _exit(1);
}

/* PID 1 of a trial: the trial's /proc (in place of the last trial's, if any: `replace` when
   it was not piled), then nothing
   but reaping (SIGCHLD ignored: the kernel reaps for it) until the spawner kills it, which
   kills the whole trial. */
static void init_main(int ready, int replace) {
    /* In a user namespace the agent is root of it: as bubblewrap does, the parts of /proc
       that root may write (its network's sysctls among them) are read-only. As real root
       the agent's uid may not write them anyway. */
    static const char *const hidden[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
                                         "/proc/bus"};
    struct sigaction ign = {.sa_handler = SIG_IGN};
    if (prctl(PR_SET_NAME, "init", 0, 0, 0) < 0 || sigaction(SIGCHLD, &ign, NULL) < 0 ||
        (replace && umount2("/proc", MNT_DETACH) < 0) ||
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        init_failed("the trial's /proc");
    for (size_t i = 0; agent_uid < 0 && i < sizeof hidden / sizeof hidden[0]; i++) {
        if (access(hidden[i], F_OK) < 0) continue;
        if (mount(hidden[i], hidden[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
            mount(NULL, hidden[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
                  MS_NODEV | MS_NOEXEC, NULL) < 0)
            init_failed("the trial's /proc/sys");
    }
    if (close_except(0, &ready, 1) < 0 || clear_capabilities() < 0)  /* it never execs */
        _exit(1);
    if (write(ready, "r", 1) != 1) _exit(1);
    close(ready);
    for (;;) pause();
}

/* A trial's init is a clone of the spawner that shares its memory, not a fork: a fork
   copied the spawner's page tables and made every page it wrote next a copy-on-write fault
   (for a process that only mounts a /proc and then sleeps). It runs on a stack of its own
   (INIT_STACKS of them, one per init not reaped yet; a fork when all are taken), calls
   nothing that allocates, takes a lock or writes the spawner's memory, and after its word
   on `ready` nothing that can fail (errno is one for both); the spawner waits for that word
   before anything of its own that reads errno. It is no more open to the trial than the
   spawner: the same memory, not dumpable, and the trial's processes can neither trace nor
   signal their PID 1. The stacks (one mapping, made once in main) are not copied into the
   spawner's forks (MADV_DONTFORK): a tracer forked while an init lives would otherwise
   share its stack pages copy-on-write, and that init would fault on its next write to
   each. Without the mapping, every init is a fork. */
#define INIT_STACKS 4
#define INIT_STACK_SIZE (64 * 1024)
static char (*init_stacks)[INIT_STACK_SIZE];
static pid_t init_stack_user[INIT_STACKS];  /* the init on it until it is reaped; 0: free */
struct init_args { int ready, replace; };

static int init_start(void *arg) {
    const struct init_args *a = arg;
    init_main(a->ready, a->replace);
    return 1;  /* init_main never returns */
}

/* A new PID namespace for the commands started from now on, with its init and its /proc;
   0, or an errno. The trials' mount namespace is made once (the first time), and each PID
   namespace's /proc replaces the last one's there (piled: pile_last_proc). */
static int new_pid_space(void) {
    static int mounts_made, proc_mounted;
    int sync[2];
    if (!mounts_made) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            return errno;
        box_proc_here = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        pile_broken = box_proc_here < 0;
        mounts_made = 1;
    }
    int replace = proc_mounted && pile_last_proc() < 0;
    /* unshare(CLONE_NEWPID) needs the children's namespace to be our own again. */
    if (setns(box_pidns, CLONE_NEWPID) < 0 || unshare(CLONE_NEWPID) < 0) return errno;
    if (pipe2(sync, O_CLOEXEC) < 0) return errno;
    int stack = -1;
    for (int i = 0; i < INIT_STACKS && stack < 0 && init_stacks; i++)
        if (!init_stack_user[i]) stack = i;
    struct init_args args = {sync[1], replace};  /* (read before its word: valid till then) */
    pid_t pid = stack < 0 ? fork()
                          : clone(init_start, init_stacks[stack] + INIT_STACK_SIZE,
                                  CLONE_VM | SIGCHLD, &args);
    if (pid < 0) {
        int err = errno;
        close(sync[0]);
        close(sync[1]);
        return err;
    }
    if (pid == 0) init_main(sync[1], replace);  /* (forked: it closes sync[0]) */
    if (stack >= 0) init_stack_user[stack] = pid;
    close(sync[1]);
    char c;
    ssize_t n;
    do n = read(sync[0], &c, 1); while (n < 0 && errno == EINTR);  /* its word (or EOF) */
    close(sync[0]);
    /* The init's namespace, for setns (the tracers' commands), from the box's /proc. */
    int ns = -1, err = 0;
    if (n == 1) {
        char path[32];
        snprintf(path, sizeof path, "%d/ns/pid", (int)pid);
        ns = openat(box_proc, path, O_RDONLY | O_CLOEXEC);
        if (ns < 0) err = errno;
    }
    if (n != 1 || err) {  /* e.g. it could not mount the trial's /proc: it is reaped later */
        kill(pid, SIGKILL);
        return err ? err : EIO;
    }
    proc_mounted = 1;
    trial_init = pid;
    trial_pidns = ns;
    return 0;
}

/* How many processes the trial has besides its init (our /proc is the trial's). */
static int trial_processes(void) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] > '0' && e->d_name[0] <= '9';
    closedir(d);
    return n > 0 ? n - 1 : 0;
}

/* Kill the current trial's processes (all of its PID namespace, through its init); how many
   there were in *killed. */
static int end_pid_space(int *killed) {
    *killed = 0;
    if (!trial_init) return 0;
    *killed = trial_processes();
    if (grow((void **)&dying, &ndying, &capdying, sizeof *dying) < 0) return ENOMEM;
    if (kill(trial_init, SIGKILL) < 0) return errno;
    dying[ndying++] = trial_init;
    trial_init = 0;
    close(trial_pidns);
    trial_pidns = -1;
    return 0;
}

/* ---- requests -------------------------------------------------------------------------- */

/* A command's child, once forked: fds [memfd, stdin, stdout, stderr, ...] as the request
   had them. `filter` is the seccomp filter it gets (the tracer's, or the keyring filter). */
static void command_main(const struct req *r, int *fds, const char *cwd, char **args,
                         char **env, int (*filter)(void)) {
    sigset_t none;
    if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0 || setsid() < 0)
        _exit(126);
    /* Its descriptors onto 0-2. A traced top has the tracer's filter from its clone on,
       and with capture that filter stops at a dup2 onto fd 1 or 2: proctor's setup, not the
       agent's, so none is made here. With 0-2 closed, F_DUPFD puts each copy on the lowest
       free number, which is the one wanted, and copies from above 2 are not stopped at. (The
       tracer's, and the spawner's, own 0-2 are taken: the request's fds are above 2; if one
       is not, plain dup2.) */
    if (fds[1] > 2 && fds[2] > 2 && fds[3] > 2) {
        if (close_from_to(0, 2) < 0) _exit(126);
        for (int i = 0; i < 3; i++)
            if (fcntl(fds[1 + i], F_DUPFD, i) != i) _exit(126);
    } else {
        for (int i = 0; i < 3; i++)
            if (dup2(fds[1 + i], i) < 0) _exit(126);
    }
    if (close_except(3, NULL, 0) < 0) {
        dprintf(2, "proctor: closing descriptors: %s\n", strerror(errno));
        _exit(126);
    }
    if (r->as_mib) {  /* no cgroup to hold memory: an address-space limit instead */
        struct rlimit lim = {(rlim_t)r->as_mib << 20, (rlim_t)r->as_mib << 20};
        if (setrlimit(RLIMIT_AS, &lim) < 0) {
            dprintf(2, "proctor: setting the memory limit: %s\n", strerror(errno));
            _exit(126);
        }
    }
    drop_privileges(filter);
    if (chdir(cwd) < 0) {  /* as the agent: where it may not go, it does not start */
        dprintf(2, "proctor: cannot enter %s: %s\n", cwd, strerror(errno));
        _exit(126);
    }
    execve(args[0], args, env);
    dprintf(2, "proctor: cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
}

/* ---- traced commands ------------------------------------------------------------------ */

/* A traced command runs under a tracer (exectrace's code) in the box's PID namespace, where
   the trial cannot see, signal or trace it, with no privilege but reading its tracees'
   memory; its first (top) process is the tracer's clone, in the trial's PID namespace. A
   tracer is forked on proctor's request (TRACER, or NEWTRIAL for the next trial's first)
   for the current trial (its PID namespace, where it starts its tops, is chosen once, while
   it still may) and its socket handed to proctor, which gives it that trial's traced
   commands itself, one at a time, and hears back from it on the control socket: the
   spawner is not woken by a traced command at all. Once every process of a command is gone
   (the trace's Z line) the tracer waits for its next order; it exits when proctor closes
   the socket. Each leads a process group of its own: KILL with FLAG_TRACE kills a tracer, and
   the kernel every traced process with it (PTRACE_O_EXITKILL); proctor never gives a
   tracer it killed another command. A tracer carries its commands' seccomp filter itself
   (one variant: with capture or without; it takes only commands of its own), so that its
   tops, its clones, have it from their start and none compiles one. */
struct tracer { uint32_t id; pid_t pid; };  /* id: of the request that made it */
static struct tracer *tracers;  /* the live ones: KILL signals no other process */
static size_t ntracers, captracers;

/* proctor's order to a tracer, one message: a RUN request with FLAG_TRACE (FLAG_CAPTURE if
   and only if the tracer captures) and fds [request memfd, stdin, stdout, stderr, trace],
   or, with the request's strings inline right after it, fds [stdin, stdout, stderr, trace].
   The tracer's replies go on the control socket, which it shares with the spawner (a
   SOCK_SEQPACKET socket: each reply one whole message): X and Z (TRACER). No pipe per
   command, and no descriptor of proctor's to watch per tracer. */
#define ORDER_FDS 5

/* Whether a RUN request's fields fit it: an argv, known flags (capture only traced, its
   limits only with it), no signal, not too many strings. */
static int run_fits(const struct req *r) {
    return r->argc && !(r->flags & ~(FLAG_TRACE | FLAG_CAPTURE)) && r->flags != FLAG_CAPTURE &&
           ((r->flags & FLAG_CAPTURE) || (!r->cap_per && !r->cap_total)) && !r->sig &&
           (uint64_t)r->argc + r->envc + 1 <= MAX_STRINGS;
}

/* What the top process starts from: a clone sharing the tracer's memory until its exec, not
   a fork (a fork copied the tracer's page tables only for the exec to throw the copy away:
   0.1 ms of CPU a command on a VM). It runs on a stack of its own and calls nothing that
   allocates or takes a lock before its exec (or its _exit); the tracer changes nothing it
   reads until the top is gone (one tree at a time). */
struct top {
    const struct req *r;
    int *fds;
    const char *cwd;
    char **args, **env;
    int go;
};

/* The top's filter is the tracer's, shared at the clone (tracer_main: filter_self). */
static int inherited_filter(void) { return 0; }

static int top_main(void *arg) {
    const struct top *t = arg;
    char c;
    if (read(t->go, &c, 1) != 1) _exit(127);  /* the tracer is gone: run nothing untraced */
    command_main(t->r, t->fds, t->cwd, t->args, t->env, inherited_filter);
    return 127;  /* command_main never returns */
}

static uint32_t tracer_job;   /* in a tracer: the command it traces */
static int tracer_capture;    /* ... and the filter variant it installed on itself */
static int tracer_unstarted;  /* ... and why it could not start the last command (0: it did) */

/* The top's end said to proctor as it happens, the tree going on (trace_tree's top_ended). */
static int say_top_ended(int status) {
    reply('X', tracer_job, status, 0, -1);
    return 0;
}

/* One traced command, in the tracer: its top cloned, followed until its whole tree is gone
   (trace format: exectrace.c), its end said at once (X) if the tree outlived it. Returns the
   wait status Z gives: the top's, or, not known, an exit with the trace's code (126:
   nothing started, and why in tracer_unstarted; 2: the end unknown). fds [request memfd or
   INLINE_FD, stdin, stdout, stderr, trace]. */
static int trace_one(const struct req *r, int *fds) {
    static char outbuf[1 << 16];
    static char top_stack[1 << 18] __attribute__((aligned(16)));
    char *buf = NULL, **s = strings(fds[0], 1 + (size_t)r->argc + r->envc, &buf);
    char **args = s ? calloc((size_t)r->argc + 1, sizeof *args) : NULL;
    char **env = s ? calloc((size_t)r->envc + 1, sizeof *env) : NULL;
    FILE *trace_file = NULL;
    int go[2] = {-1, -1}, last = -1, code = 126;
    tracer_unstarted = EINVAL;
    if (((r->flags & FLAG_CAPTURE) != 0) != tracer_capture) {  /* proctor matches them */
        dprintf(fds[3], "proctor: a tracer without the command's filter\n");
        goto out;
    }
    if (!args || !env || pipe2(go, O_CLOEXEC) < 0 || !(trace_file = fdopen(fds[4], "w"))) {
        tracer_unstarted = errno ? errno : EINVAL;
        dprintf(fds[3], "proctor: starting the tracer: %s\n", strerror(tracer_unstarted));
        goto out;
    }
    memcpy(args, s + 1, r->argc * sizeof *args);
    memcpy(env, s + 1 + r->argc, r->envc * sizeof *env);
    setvbuf(trace_file, outbuf, _IOFBF, sizeof outbuf);
    trace_to(trace_file, (r->flags & FLAG_CAPTURE) != 0, r->cap_per, r->cap_total);
    struct top top_args = {r, fds, s[0], args, env, go[0]};
    pid_t top = clone(top_main, top_stack + sizeof top_stack, CLONE_VM | SIGCHLD, &top_args);
    if (top < 0) {  /* ENOMEM: the trial's PID namespace is gone (its init killed) */
        tracer_unstarted = errno;
        dprintf(fds[3], "proctor: cannot start %s: %s\n", args[0], strerror(errno));
        fclose(trace_file);
        goto out;
    }
    tracer_unstarted = 0;
    /* The command's own descriptors are its top's now: its output pipes close when its
       tree is done with them, whatever the tracer does. */
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0) close(fds[i]);
    close(go[0]);
    tracer_job = r->id;
    code = trace_tree(top, go[1], say_top_ended, &last);  /* it closes go and the trace */
    go[0] = go[1] = -1;
out:
    if (go[0] >= 0) { close(go[0]); close(go[1]); }
    free(env);
    free(args);
    free(s);
    free(buf);
    return last >= 0 ? last : (code ? (code & 0xff) : 2) << 8;
}

/* A tracer's life: set up once (the trial's PID namespace for its tops; the box's /proc,
   where it reads its tracees' by their pids in the box's namespace, as a directory fd; only
   its socket and the control socket open besides; of all privileges only CAP_SYS_PTRACE, and as root CAP_SETUID
   and CAP_SETGID, which its tops need to take the agent's ids), then one order after
   another (ORDER_FDS) until proctor closes the socket. After each, nothing of the command
   stays open and it says Z. A set-up that failed is said on the first order's stderr (its
   end: 126); nothing is started then. An order that is not one ends the tracer (126). */
static int set_fs_ids(uid_t uid, gid_t gid);

static void tracer_main(int sock, int capture) {
    sigset_t none;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = 1u << CAP_SYS_PTRACE;
    if (agent_uid >= 0)  /* as root: each top, its clone, gives itself the agent's ids */
        d[0].effective = d[0].permitted |= 1u << CAP_SETUID | 1u << CAP_SETGID;
    int keep[3] = {sock, box_proc, ctl}, broken = 0;
    tracer_capture = capture;
    /* The trace filter of its commands on itself, while it may (CAP_SYS_ADMIN), after its
       last dup2 onto 0-2 and before anything else of its own could stop at it: each top it
       clones has it already. */
    errno = 0;
    if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0 ||
        setpgid(0, 0) < 0 || prctl(PR_SET_NAME, "tracer", 0, 0, 0) < 0 ||
        setns(trial_pidns, CLONE_NEWPID) < 0 || close_except(0, keep, 3) < 0 ||
        open("/dev/null", O_RDWR) != 0 || dup2(0, 1) != 1 || dup2(0, 2) != 2 ||
        filter_self(capture) < 0 ||
        (syscall(SYS_capset, &h, d) < 0 && clear_capabilities() < 0))
        broken = errno ? errno : EIO;
    /* As root, with the agent's file system ids: its tracees' /proc/PID/fd (where fd 1 and
       2 point: the O and W lines) is open to their owner only, and the tracer keeps no
       CAP_DAC_*; its other reads (/proc/PID/exe, cmdline, the programs a copy is compared
       with) are the agent's to read too. Best effort: without them, those targets are "". */
    if (agent_uid >= 0 && !broken) (void)set_fs_ids((uid_t)agent_uid, (gid_t)agent_gid);
    trace_proc(box_proc);
    for (;;) {
        struct req r;
        int nfds = 0, got[ORDER_FDS], fds[ORDER_FDS];
        struct iovec iov[2] = {{&r, sizeof r}, {inline_buf, sizeof inline_buf}};
        union { char buf[CMSG_SPACE(ORDER_FDS * sizeof(int))]; struct cmsghdr align; } u;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
                             .msg_controllen = sizeof u.buf};
        ssize_t n;
        do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC); while (n < 0 && errno == EINTR);
        if (n <= 0) _exit(0);  /* proctor is done with this tracer, or gone */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k && nfds < ORDER_FDS; i++)
                memcpy(&got[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
        /* The strings inline and 4 fds, or no strings and 5 (a memfd first): nothing else. */
        inline_len = n > (ssize_t)sizeof r ? (size_t)n - sizeof r : 0;
        if (n < (ssize_t)sizeof r || nfds != (inline_len ? ORDER_FDS - 1 : ORDER_FDS) ||
            (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || r.op != OP_RUN ||
            !(r.flags & FLAG_TRACE) || !run_fits(&r))
            _exit(126);
        fds[0] = INLINE_FD;
        memcpy(fds + ORDER_FDS - nfds, got, (size_t)nfds * sizeof *got);
        int status = 126 << 8;
        if (broken) dprintf(fds[3], "proctor: starting the tracer: %s\n", strerror(broken));
        else status = trace_one(&r, fds);
        if (close_except(3, keep, 3) < 0) _exit(126);
        /* err: the command was not started (then proctor lets this tracer go) */
        reply('Z', r.id, status, broken ? broken : tracer_unstarted, -1);
        if (broken) _exit(126);
    }
}

/* A child in the box's PID namespace (not the trial's); -1 with errno on failure. */
static pid_t fork_in_box(void) {
    if (setns(box_pidns, CLONE_NEWPID) < 0) return -1;
    pid_t pid = fork();
    int err = errno;
    if (pid != 0 && setns(trial_pidns, CLONE_NEWPID) < 0) die("back to the trial's namespace");
    errno = err;
    return pid;
}

/* A new tracer of the current trial (its PID namespace made if need be), the capturing
   variant or not, known by `id` (its request's); 0 and in *sock proctor's end of its
   socket, or an errno. */
static int fork_tracer(uint32_t id, int capture, int *sock) {
    int err, sv[2];
    if (grow((void **)&tracers, &ntracers, &captracers, sizeof *tracers) < 0) return ENOMEM;
    if (!trial_init && (err = new_pid_space()) != 0) return err;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return errno;
    pid_t pid = fork_in_box();
    if (pid == 0) tracer_main(sv[1], capture);
    err = errno;
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return err;
    }
    tracers[ntracers++] = (struct tracer){id, pid};
    *sock = sv[0];
    return 0;
}

/* TRACER (flags FLAG_CAPTURE: the variant that captures). */
static void new_tracer(const struct req *r, int *fds, int nfds) {
    (void)fds;
    if (nfds || r->sig || r->argc || r->envc || r->as_mib || (r->flags & ~FLAG_CAPTURE) ||
        r->cap_per || r->cap_total)
        fail(r, EINVAL);
    else {
        int sock = -1, err = fork_tracer(r->id, (r->flags & FLAG_CAPTURE) != 0, &sock);
        reply('N', r->id, 0, err, sock);
        if (sock >= 0) close(sock);
    }
}

static void run(const struct req *r, int *fds, int nfds) {
    if (nfds != 4 || (r->flags & FLAG_TRACE) || !run_fits(r)) {  /* traced: a tracer's */
        fail(r, EINVAL);
        return;
    }
    char *buf = NULL;
    char **s = strings(fds[0], 1 + (size_t)r->argc + r->envc, &buf);
    if (!s) { fail(r, EINVAL); return; }
    char *cwd = s[0], **argv = s + 1, **envp = s + 1 + r->argc;
    /* argv must end with NULL: copies of both lists, each with its own terminator. */
    char **env = calloc((size_t)r->envc + 1, sizeof *env);
    char **args = calloc((size_t)r->argc + 1, sizeof *args);
    int err = 0;
    if (!env || !args || grow((void **)&jobs, &njobs, &capjobs, sizeof *jobs) < 0) {
        err = ENOMEM;
        goto out;
    }
    memcpy(env, envp, r->envc * sizeof *env);
    memcpy(args, argv, r->argc * sizeof *args);
    if (!trial_init && (err = new_pid_space()) != 0) goto out;
    pid_t pid = fork();
    if (pid < 0) { err = errno; goto out; }
    if (pid == 0) command_main(r, fds, cwd, args, env, keyring_filter);
    jobs[njobs++] = (struct job){r->id, pid};
out:
    if (err) fail(r, err);
    free(env);
    free(args);
    free(s);
    free(buf);
}

/* KILL: the process group of command `id`, or with FLAG_TRACE of tracer `id`. */
static void kill_job(const struct req *r, int *fds, int nfds) {
    (void)fds;
    if (nfds || r->sig <= 0 || r->sig >= NSIG || r->argc || r->envc || r->as_mib ||
        (r->flags & ~FLAG_TRACE) || r->cap_per || r->cap_total) {
        fail(r, EINVAL);
        return;
    }
    for (size_t i = 0; r->flags && i < ntracers; i++) {
        if (tracers[i].id == r->id) {
            kill(-tracers[i].pid, r->sig);
            kill(tracers[i].pid, r->sig);
        }
    }
    for (size_t i = 0; !r->flags && i < njobs; i++) {
        if (jobs[i].id == r->id) {
            kill(-jobs[i].pid, r->sig);  /* ESRCH: it left its group, or is gone: fine */
            kill(jobs[i].pid, r->sig);
        }
    }
}

static void listen_on(const struct req *r, int *fds, int nfds) {
    char *buf = NULL;
    char **s = nfds == 1 && !r->argc && !r->envc && !r->sig && !r->flags && !r->as_mib &&
                       !r->cap_per && !r->cap_total ? strings(fds[0], 2, &buf) : NULL;
    if (!s) { fail(r, EINVAL); return; }
    char *end;
    errno = 0;
    long port = strtol(s[1], &end, 10);
    int six = strchr(s[0], ':') != NULL;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    int err = 0, sock = -1, one = 1;
    if (errno || end == s[1] || *end || port < 1 || port > 65535 ||
        (six ? inet_pton(AF_INET6, s[0], &a6.sin6_addr) : inet_pton(AF_INET, s[0], &a4.sin_addr)) != 1)
        err = EINVAL;
    else if ((sock = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
             setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
             (six ? bind(sock, (struct sockaddr *)&a6, sizeof a6)
                  : bind(sock, (struct sockaddr *)&a4, sizeof a4)) < 0 ||
             listen(sock, 256) < 0)
        err = errno;
    if (err) fail(r, err);
    else reply('L', r->id, 0, 0, sock);
    if (sock >= 0) close(sock);
    free(s);
    free(buf);
}

static int only_op(const struct req *r, int nfds) {
    return !nfds && !r->sig && !r->argc && !r->envc && !r->as_mib && !r->flags && !r->cap_per &&
           !r->cap_total;
}

/* Loopback up in the (new) network namespace: 127.0.0.0/8 and ::1 come with it. */
static int loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int err = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) err = errno;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (!err && ioctl(s, SIOCSIFFLAGS, &ifr) < 0) err = errno;
    close(s);
    return err;
}

/* The network namespace's counters as a blob: its interfaces' (only loopback), and the IP,
   ICMP, TCP and UDP MIBs of IPv4 and IPv6; NULL if they cannot be read (then the namespace
   is never kept). Every count of /proc/net/netstat is of packets or connections, which these
   count too; a connection that sends nothing (no route) counts here as well. The files stay
   open from the namespace's making (remember_network) and are read again from their start:
   each read formats the counters anew, without the lookup of three /proc paths, and the
   kernel keeps the buffer that fits (a first read of snmp6 formats it twice). An open file
   shows the namespace it was opened in: they are reopened with every new namespace. */
static const char *const net_files[] = {"self/net/dev", "self/net/snmp", "self/net/snmp6"};
#define N_NET_FILES (sizeof net_files / sizeof net_files[0])
static int net_fd[N_NET_FILES] = {-1, -1, -1};  /* -1: not open (or absent: no IPv6) */
static int net_open;                            /* opened in the current namespace */

static char *net_counters(size_t *len) {
    if (!net_open) return NULL;
    size_t cap = 16384, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (size_t i = 0; i < N_NET_FILES; i++) {
        int fd = net_fd[i];
        if (fd < 0) continue;  /* no IPv6 here */
        if (lseek(fd, 0, SEEK_SET) != 0) { free(buf); return NULL; }
        for (;;) {
            if (n == cap) {
                char *more = realloc(buf, cap *= 2);
                if (!more) { free(buf); return NULL; }
                buf = more;
            }
            ssize_t k = read(fd, buf + n, cap - n);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) { free(buf); return NULL; }
            if (k == 0) break;
            n += (size_t)k;
        }
    }
    *len = n;
    return buf;
}

/* The counters of the current network namespace as it was made (NULL: none known). */
static char *net_made;
static size_t net_made_len;

/* Nothing known of the current namespace: its next check says it was used. */
static void forget_network(void) {
    for (size_t i = 0; i < N_NET_FILES; i++) {
        if (net_fd[i] >= 0) close(net_fd[i]);
        net_fd[i] = -1;
    }
    net_open = 0;
    free(net_made);
    net_made = NULL;
}

static void remember_network(void) {
    forget_network();
    for (size_t i = 0; i < N_NET_FILES; i++) {
        net_fd[i] = openat(box_proc, net_files[i], O_RDONLY | O_CLOEXEC);
        if (net_fd[i] < 0 && errno != ENOENT) { forget_network(); return; }
    }
    net_open = 1;
    net_made = net_counters(&net_made_len);
}

/* Whether the trial used its network namespace: anything counted at all (a packet on
   loopback, a connection refused, a route not found). One that counted nothing holds
   nothing of the trial: no socket (its processes are gone), no TIME_WAIT, no counter. */
static int network_used(void) {
    size_t len;
    char *now = net_counters(&len);
    int used = !now || !net_made || len != net_made_len || memcmp(now, net_made, len) != 0;
    free(now);
    return used;
}

static void new_trial(const struct req *r, int *fds, int nfds) {
    (void)fds;
    struct req plain = *r;  /* its flags: FLAG_TRACE asks for a tracer of the new trial */
    plain.flags = 0;
    if (!only_op(&plain, nfds) || (r->flags & ~(FLAG_TRACE | FLAG_CAPTURE)) ||
        r->flags == FLAG_CAPTURE) {
        fail(r, EINVAL);
        return;
    }
    int killed, err = end_pid_space(&killed), renewed = 0;
    if (!err && unshare(CLONE_NEWIPC) < 0) err = errno;
    if (!err && network_used()) {
        renewed = 1;
        forget_network();  /* whatever happens next, the old one's files say nothing */
        if (unshare(CLONE_NEWNET) < 0) err = errno;
        else if (!(err = loopback_up())) remember_network();
    }
    if (!(r->flags & FLAG_TRACE)) {
        reply('T', r->id, renewed, err, -1);
        /* The new trial's PID namespace, made now, while proctor prepares the trial, rather
           than at its first command; if it cannot be made, that command says why. */
        if (!err) new_pid_space();
        return;
    }
    /* With the trial's first tracer, its socket sent with T (none if it could not be made:
       the trial's first traced command asks for one, and is told why), known by this id. */
    int sock = -1;
    if (!err) (void)fork_tracer(r->id, (r->flags & FLAG_CAPTURE) != 0, &sock);
    reply('T', r->id, renewed, err, sock);
    if (sock >= 0) close(sock);
}

static void ping(const struct req *r, int *fds, int nfds) {
    (void)fds;
    if (!only_op(r, nfds)) fail(r, EINVAL);
    else reply('P', r->id, 0, 0, -1);
}

static void kill_all(const struct req *r, int *fds, int nfds) {
    (void)fds;
    if (!only_op(r, nfds)) { fail(r, EINVAL); return; }
    int killed, err = end_pid_space(&killed);
    if (err || !ndying) {
        reply('A', r->id, killed, err, -1);
        return;
    }
    if (grow((void **)&waiters, &nwaiters, &capwaiters, sizeof *waiters) < 0) {
        reply('A', r->id, killed, ENOMEM, -1);
        return;
    }
    waiters[nwaiters++] = (struct waiter){r->id, killed};
}

/* The file system uid and gid every access is checked with; returns 0 when both hold. */
static int set_fs_ids(uid_t uid, gid_t gid) {
    setfsgid(gid);
    setfsuid(uid);
    /* An invalid id changes nothing and returns the current one: how the result is read. */
    return (uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid ? 0 : -1;
}

static void open_as_agent(const struct req *r, int *fds, int nfds) {
    char *buf = NULL;
    int fits = nfds == 1 && r->sig >= 0 && r->sig <= 2 && !r->argc && !r->envc && !r->as_mib &&
               !r->flags && !r->cap_per && !r->cap_total;
    char **s = fits ? strings(fds[0], 1, &buf) : NULL;
    if (!s) { fail(r, EINVAL); return; }
    const int readable = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    int fd = -1, err = 0, unread = 0;
    if (agent_uid >= 0 && set_fs_ids((uid_t)agent_uid, (gid_t)agent_gid) < 0) {
        err = EPERM;
    } else {
        fd = open(s[0], r->sig == 0 ? readable : O_PATH | O_CLOEXEC);
        if (fd < 0) err = errno;
    }
    struct stat st;
    if (fd >= 0 && r->sig == 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        /* The same file again, for reading, with the same rights (through the box's /proc,
           where this process is itself): no second walk of the path. */
        char self[32];
        snprintf(self, sizeof self, "self/fd/%d", fd);
        int rd = openat(box_proc, self, readable);
        if (rd < 0) unread = errno;
        else { close(fd); fd = rd; }
    }
    /* Back to the spawner's own ids; if that fails, it cannot be trusted to go on. */
    if (agent_uid >= 0 && set_fs_ids(getuid(), getgid()) < 0) _exit(1);
    if (err) reply('E', r->id, 0, err, -1);
    else reply('O', r->id, unread, 0, fd);
    if (fd >= 0) close(fd);
    free(s);
    free(buf);
}

typedef void (*handler)(const struct req *, int *, int);
static const handler handlers[] = {
    [OP_RUN] = run, [OP_KILL] = kill_job, [OP_LISTEN] = listen_on,
    [OP_NEWTRIAL] = new_trial, [OP_PING] = ping, [OP_KILLALL] = kill_all,
    [OP_OPEN] = open_as_agent, [OP_TRACER] = new_tracer,
};

static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == trial_init) trial_init = 0;  /* killed by the kernel (the OOM killer) */
        for (int i = 0; i < INIT_STACKS; i++)
            if (init_stack_user[i] == pid) init_stack_user[i] = 0;  /* its stack is free */
        for (size_t i = 0; i < ntracers; i++) {
            if (tracers[i].pid == pid) {  /* proctor closed its socket (0), it failed, or KILL */
                if (status) reply('D', tracers[i].id, status, 0, -1);
                tracers[i] = tracers[--ntracers];
                break;
            }
        }
        for (size_t i = 0; i < ndying; i++) {
            if (dying[i] == pid) {
                dying[i] = dying[--ndying];
                break;
            }
        }
        for (size_t i = 0; i < njobs; i++) {
            struct job *j = &jobs[i];
            if (j->pid != pid) continue;
            reply('X', j->id, status, 0, -1);
            jobs[i] = jobs[--njobs];
            break;
        }
    }
    if (!ndying) {  /* every killed trial is gone, its processes with it */
        for (size_t i = 0; i < nwaiters; i++) reply('A', waiters[i].id, waiters[i].killed, 0, -1);
        nwaiters = 0;
    }
}

static void request(void) {
    struct req r;
    memset(&r, 0, sizeof r);
    struct iovec iov[2] = {{&r, sizeof r}, {inline_buf, sizeof inline_buf}};
    union { char buf[CMSG_SPACE(MAX_FDS * sizeof(int))]; struct cmsghdr align; } u;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    inline_len = 0;
    ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
    if (n == 0) {  /* proctor is gone, or sent an empty message */
        struct pollfd p = {ctl, POLLRDHUP, 0};
        if (poll(&p, 1, 0) != 0) _exit(0);
    }
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) return;
        _exit(0);
    }
    /* fds[0]: the place of the request memfd, INLINE_FD when the strings came inline. */
    int fds[1 + MAX_FDS], nfds = 0, *got = fds + 1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < MAX_FDS; i++)
            memcpy(&got[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (n < (ssize_t)sizeof r || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        reply('E', 0, 0, EBADMSG, -1);  /* not a request: nothing of it is trusted */
    } else if (n > (ssize_t)sizeof r) {  /* its strings inline */
        inline_len = (size_t)n - sizeof r;
        if (r.op == OP_RUN || r.op == OP_LISTEN || r.op == OP_OPEN) {
            fds[0] = INLINE_FD;
            handlers[r.op](&r, fds, nfds + 1);
        } else {
            fail(&r, EINVAL);
        }
    } else if (r.op < sizeof handlers / sizeof handlers[0] && handlers[r.op]) {
        handlers[r.op](&r, got, nfds);
    } else {
        fail(&r, EINVAL);
    }
    inline_len = 0;
    for (int i = 0; i < nfds; i++) close(got[i]);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: spawner CONTROL_FD UID GID\n");
        return 2;
    }
    ctl = (int)number(argv[1], 3, FD_BOUND - 1);
    agent_uid = number(argv[2], -1, 0x7fffffff);
    agent_gid = number(argv[3], -1, 0x7fffffff);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) die("making the spawner undumpable");
    void *stacks = mmap(NULL, INIT_STACKS * INIT_STACK_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stacks != MAP_FAILED) {
        if (madvise(stacks, INIT_STACKS * INIT_STACK_SIZE, MADV_DONTFORK) == 0)
            init_stacks = stacks;
        else
            munmap(stacks, INIT_STACKS * INIT_STACK_SIZE);
    }
    /* SCHED_BATCH, inherited by every process of the box: the same share of the CPU, but a
       request or a pipe that wakes one never preempts proctor's loop, which runs the trials.
       Best effort: where the policy cannot be set, the box runs as before. */
    struct sched_param batch = {0};
    (void)sched_setscheduler(0, SCHED_BATCH, &batch);
    /* As root, files are opened for the agent with its uid and gid (OP_OPEN): no group of
       the spawner's own may add to what they can read. */
    if (agent_uid >= 0 && setgroups(0, NULL) < 0) die("setgroups");
    if (drop_bounding_set() < 0) die("dropping the bounding set");
    sigset_t all, chld;
    if (sigfillset(&all) < 0 || sigprocmask(SIG_SETMASK, &all, NULL) < 0 ||
        sigemptyset(&chld) < 0 || sigaddset(&chld, SIGCHLD) < 0)
        die("blocking signals");
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) die("signalfd");
    box_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    box_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    box_proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (box_mnt < 0 || box_pidns < 0 || box_proc < 0) die("the box's namespaces");
    /* Whatever else bwrap passed (e.g. the fd this program was executed from) goes. */
    int keep[] = {ctl, sfd, box_mnt, box_pidns, box_proc};
    if (close_except(3, keep, sizeof keep / sizeof keep[0]) < 0) die("closing inherited descriptors");
    if (fcntl(ctl, F_SETFD, FD_CLOEXEC) < 0) die("the control socket");
    remember_network();  /* bubblewrap's: the first trial's */
    prepare_filters();   /* assembled once here; each traced command only installs one */
    reply('R', 0, getpid(), 0, -1);
    for (;;) {  /* requests and children's ends: a traced command wakes neither */
        struct pollfd p[2] = {{ctl, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si) {}
            reap();
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) request();
    }
}
