/* spawner: start a trial's commands from inside its sandbox, on proctor's request.

   spawner CONTROL_FD UID GID

   The first process of every box (sandbox/namespaces.py). proctor talks to it over
   CONTROL_FD, a SOCK_SEQPACKET socket only the two of them hold; a command starts as a fork
   of a process already in the box's namespaces and cgroup, so no `nsenter` and no wrapper
   process is needed per command. Requests (struct req, file descriptors in SCM_RIGHTS):

     RUN     fds [request memfd, stdin, stdout, stderr]; the memfd holds NUL-terminated
             strings: cwd, argc argv strings, envc environment strings. The child gets a
             session of its own, those fds as 0-2 and nothing else, an address-space limit
             when as_mib is set, UID/GID (-1: keep the uid, drop every capability),
             no-new-privs and the keyring filter, then execs.
             Replies S (value: its pid), later X (value: wait status); E (err) if no fork.
     KILL    sends `sig` to the process group of command `id`.
     LISTEN  fds [memfd "host\0port\0"]: a listening TCP socket bound in the box's network,
             sent back with reply L (E on failure): how proctor's forwarders get inside.
     NEWIPC  a fresh IPC namespace for the commands started from now on (SysV IPC and POSIX
             message queues of the previous trial stay behind, with nobody left to see them).
             Reply I (err set on failure).
     PING    reply P: every request sent before has been handled.
     OPEN    fds [memfd "path\0"]; `sig` 0: open for reading, 1: O_PATH (to stat). The path
             is opened inside the box (its mounts, its symlinks) with the agent's file
             rights: as root with the agent's uid and gid as file system uid and gid (the
             spawner keeps no supplementary groups), never blocking on a FIFO. The
             descriptor comes back with reply O (E with errno: what the agent would get).

   The spawner is not dumpable (no ptrace, no /proc/PID/fd, mem or environ for the agent)
   and, as root, runs as a uid the agent's commands never have. When proctor goes, the
   socket reads EOF and the spawner exits, and with it the box (it is the box's main
   process). Signals other than SIGKILL/SIGSTOP are blocked; proctor sends SIGCONT after
   each trial in case an agent running as the same uid stopped it. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define X32_BIT 0xffffffffu
#else
#error "spawner supports x86_64 and aarch64"
#endif

enum { OP_RUN = 1, OP_KILL = 2, OP_LISTEN = 3, OP_NEWIPC = 4, OP_PING = 5, OP_OPEN = 6 };

struct req { uint32_t op, id; int32_t sig; uint32_t argc, envc, as_mib; };
struct rep { uint32_t kind, id; int32_t value, err; };

struct job { uint32_t id; pid_t pid; };
static struct job *jobs;
static size_t njobs, capjobs;

static int ctl;
static long agent_uid = -1, agent_gid = -1;

static void reply(uint32_t kind, uint32_t id, int32_t value, int32_t err, int fd) {
    struct rep r = {kind, id, value, err};
    struct iovec iov = {&r, sizeof r};
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
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

/* The request memfd as an array of `n` strings (pointers into one buffer). */
static char **strings(int fd, size_t n, char **buffer) {
    struct stat st;
    if (fstat(fd, &st) < 0) return NULL;
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) return NULL;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t k = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (k <= 0) { free(buf); return NULL; }
        got += (size_t)k;
    }
    buf[got] = 0;
    char **out = calloc(n + 1, sizeof *out);
    if (!out) { free(buf); return NULL; }
    char *p = buf, *end = buf + got;
    for (size_t i = 0; i < n; i++) {
        if (p >= end) { free(out); free(buf); return NULL; }
        out[i] = p;
        p += strlen(p) + 1;
    }
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

static void drop_privileges(void) {
    for (int cap = 0; cap <= 63; cap++) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* As root, uid 0 -> the agent's uid clears the permitted and effective sets (no
       SECBIT_KEEP_CAPS); in a user namespace the uid stays and capset does it. */
    if (agent_uid >= 0 && (setgroups(0, NULL) < 0 ||
                           setresgid((gid_t)agent_gid, (gid_t)agent_gid, (gid_t)agent_gid) < 0 ||
                           setresuid((uid_t)agent_uid, (uid_t)agent_uid, (uid_t)agent_uid) < 0)) {
        perror("proctor spawner: dropping to the agent's uid");
        _exit(126);
    }
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        keyring_filter() < 0) {
        perror("proctor spawner: dropping privileges");
        _exit(126);
    }
}

static void run(const struct req *r, int *fds, int nfds) {
    if (nfds != 4) { reply('E', r->id, 0, EINVAL, -1); return; }
    char *buf = NULL;
    char **s = strings(fds[0], 1 + (size_t)r->argc + r->envc, &buf);
    if (!s || r->argc == 0) { reply('E', r->id, 0, EINVAL, -1); free(s); free(buf); return; }
    char *cwd = s[0], **argv = s + 1, **envp = s + 1 + r->argc;
    /* argv must end with NULL: put it where envp starts, after moving envp down by one. */
    char **env = calloc((size_t)r->envc + 1, sizeof *env);
    char **args = calloc((size_t)r->argc + 1, sizeof *args);
    if (!env || !args) { reply('E', r->id, 0, ENOMEM, -1); goto out; }
    memcpy(env, envp, r->envc * sizeof *env);
    memcpy(args, argv, r->argc * sizeof *args);
    if (njobs == capjobs) {
        size_t cap = capjobs ? capjobs * 2 : 16;
        struct job *j = realloc(jobs, cap * sizeof *j);
        if (!j) { reply('E', r->id, 0, ENOMEM, -1); goto out; }
        jobs = j;
        capjobs = cap;
    }
    pid_t pid = fork();
    if (pid < 0) { reply('E', r->id, 0, errno, -1); goto out; }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        setsid();
        for (int i = 0; i < 3; i++) {
            if (dup2(fds[1 + i], i) < 0) _exit(126);
        }
        if (syscall(SYS_close_range, 3, ~0U, 0) < 0) {
            for (int fd = 3; fd < 4096; fd++) close(fd);
        }
        if (chdir(cwd) < 0) {
            dprintf(2, "proctor: cannot enter %s: %s\n", cwd, strerror(errno));
            _exit(126);
        }
        if (r->as_mib) {  /* no cgroup to hold memory: an address-space limit instead */
            struct rlimit lim = {(rlim_t)r->as_mib << 20, (rlim_t)r->as_mib << 20};
            setrlimit(RLIMIT_AS, &lim);
        }
        drop_privileges();
        execve(args[0], args, env);
        dprintf(2, "proctor: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    jobs[njobs++] = (struct job){r->id, pid};
    reply('S', r->id, pid, 0, -1);
out:
    free(env);
    free(args);
    free(s);
    free(buf);
}

static void kill_job(const struct req *r) {
    for (size_t i = 0; i < njobs; i++) {
        if (jobs[i].id == r->id) {
            kill(-jobs[i].pid, r->sig);
            kill(jobs[i].pid, r->sig);
        }
    }
}

static void listen_on(const struct req *r, int *fds, int nfds) {
    char *buf = NULL;
    char **s = nfds == 1 ? strings(fds[0], 2, &buf) : NULL;
    if (!s) { reply('E', r->id, 0, EINVAL, -1); return; }
    int six = strchr(s[0], ':') != NULL;
    int sock = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, err = 0;
    if (sock < 0) {
        err = errno;
    } else {
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(s[1]))};
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)atoi(s[1]))};
        int ok = six ? inet_pton(AF_INET6, s[0], &a6.sin6_addr) : inet_pton(AF_INET, s[0], &a4.sin_addr);
        if (ok != 1) err = EINVAL;
        else if ((six ? bind(sock, (struct sockaddr *)&a6, sizeof a6)
                      : bind(sock, (struct sockaddr *)&a4, sizeof a4)) < 0 ||
                 listen(sock, 256) < 0)
            err = errno;
    }
    if (err) reply('E', r->id, 0, err, -1);
    else reply('L', r->id, 0, 0, sock);
    if (sock >= 0) close(sock);
    free(s);
    free(buf);
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
    char **s = nfds == 1 && (r->sig == 0 || r->sig == 1) ? strings(fds[0], 1, &buf) : NULL;
    if (!s) { reply('E', r->id, 0, EINVAL, -1); return; }
    int flags = r->sig == 1 ? O_PATH | O_CLOEXEC : O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    int fd = -1, err = 0;
    if (agent_uid >= 0 && set_fs_ids((uid_t)agent_uid, (gid_t)agent_gid) < 0) {
        err = EPERM;
    } else {
        fd = open(s[0], flags);
        if (fd < 0) err = errno;
    }
    /* Back to the spawner's own ids; if that fails, it cannot be trusted to go on. */
    if (agent_uid >= 0 && set_fs_ids(getuid(), getgid()) < 0) _exit(1);
    if (err) reply('E', r->id, 0, err, -1);
    else reply('O', r->id, 0, 0, fd);
    if (fd >= 0) close(fd);
    free(s);
    free(buf);
}

static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < njobs; i++) {
            if (jobs[i].pid == pid) {
                reply('X', jobs[i].id, status, 0, -1);
                jobs[i] = jobs[--njobs];
                break;
            }
        }
    }
}

static void request(void) {
    struct req r;
    struct iovec iov = {&r, sizeof r};
    union { char buf[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
    if (n == 0) _exit(0);  /* proctor is gone */
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) return;
        _exit(0);
    }
    int fds[8], nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k && nfds < 8; i++) memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
    }
    if (n != sizeof r) r.op = 0;
    switch (r.op) {
    case OP_RUN: run(&r, fds, nfds); break;
    case OP_KILL: kill_job(&r); break;
    case OP_LISTEN: listen_on(&r, fds, nfds); break;
    case OP_NEWIPC: reply('I', r.id, 0, unshare(CLONE_NEWIPC) < 0 ? errno : 0, -1); break;
    case OP_PING: reply('P', r.id, 0, 0, -1); break;
    case OP_OPEN: open_as_agent(&r, fds, nfds); break;
    default: reply('E', r.id, 0, EINVAL, -1);
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: spawner CONTROL_FD UID GID\n");
        return 2;
    }
    ctl = atoi(argv[1]);
    agent_uid = atol(argv[2]);
    agent_gid = atol(argv[3]);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* As root, files are opened for the agent with its uid and gid (OP_OPEN): no group of
       the spawner's own may add to what they can read. */
    if (agent_uid >= 0 && setgroups(0, NULL) < 0) {
        perror("proctor spawner: setgroups");
        return 1;
    }
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) { perror("proctor spawner: signalfd"); return 1; }
    /* Whatever else bwrap passed (e.g. the fd this program was executed from) goes. */
    for (int fd = 3; fd < 1024; fd++) {
        if (fd != ctl && fd != sfd) close(fd);
    }
    reply('R', 0, getpid(), 0, -1);
    struct pollfd p[2] = {{ctl, POLLIN, 0}, {sfd, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si) {}
            reap();
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) request();
    }
}
