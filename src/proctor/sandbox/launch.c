/* launch: proctor's first program inside a docker trial's container (docs/security.md,
   "The docker backend"). Static, mounted read-only: nothing the agent can change in the
   container runs before it, so a root agent that replaced /bin/sh, setpriv or a library
   changes nothing of how proctor starts a command or a verifier.

   launch run [--verify DIR] [--cwd DIR] -- PROGRAM [ARG...]

     docker exec starts it as root. PROGRAM runs with its stdout and stderr on pipes, copied
     to launch's own until PROGRAM exits and then for at most 0.2 s more: what PROGRAM left
     running holds the pipes, not docker exec's (which would wait for it). Exits as PROGRAM
     did (128 + the signal when one killed it).

     --verify DIR (a Harbor verifier; proctor starts it from the host with nsenter into the
     container's namespaces and cgroups, holding every capability): first a mount namespace
     of its own, in which the cover over DIR's parent (`launch cover`) is lifted, DIR/tests
     and DIR/logs (host directories, proctor's) are bound on /tests and /logs/verifier (in
     the container's own namespace both are mount points of their own, which no process
     without CAP_SYS_ADMIN can rename away), and the parent covered again. DIR/trace is opened first and an
     argument "@TRACE@" becomes /proc/PID/fd/N of launch's descriptor of it: the tracer (CAP_SYS_PTRACE) can open it, the verifier's own processes cannot. PROGRAM
     then runs with a bounding set of Docker's default capabilities plus CAP_SYS_PTRACE (the
     tracer's; `launch drop` takes it from the command) and a seccomp filter refusing what
     Docker's default profile refuses a container without CAP_SYS_ADMIN.

   launch cover DIR

     Mounts an empty read-only tmpfs over DIR (run once by nsenter from the host when the
     container starts): in the container's own namespace, nothing of the verifier's is seen.

   launch drop [--agent [--userns | --userns-if-allowed | --userns-of PID]] [--uid UID --gid GID]
               [--no-caps] -- PROGRAM [ARG...]

     Run by the tracer as the traced command's first program, then execs PROGRAM with less:
     a bounding set of Docker's default capabilities and never CAP_SYS_PTRACE; with --agent
     also without CAP_MKNOD; with --uid, that uid and gid, no supplementary groups and no new
     privileges; with --no-caps, no capability at all. The seccomp filter below, unless a
     filter is already there (Docker's default profile, or a verifier's).

     --agent --userns without --uid (a root agent, as in a Harbor image): PROGRAM runs in a user
     namespace of its own whose ids map one to one onto the container's. Root there keeps what
     Docker's root may do to the container's files (apt, chown, setuid programs), but holds no
     capability in the container's own namespaces: no process of the agent's can trace,
     mount, or read the memory, root or descriptors of any process proctor or a verifier runs
     (docs/security.md). --userns-if-allowed: the same where the host allows it, else as
     without (the container's keeper, which runs the image's ENTRYPOINT: proctor then sees
     which it got). --userns-of PID: the user namespace of that process (the keeper's), so
     that every command of the agent's shares one, as every process of root's does under
     Harbor (`ss -p`, `lsof` see the server an earlier command started).

   launch userns

     Exits 0 if a command here may have a user namespace of its own (an AppArmor policy, a
     seccomp profile or a sysctl may refuse it), else says why and exits 1. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "launch supports x86_64 and aarch64"
#endif

#define GRACE_MS 200          /* output still relayed after PROGRAM exits */

/* Docker's default capability set (moby's oci/caps/defaults.go). */
static const int DOCKER_DEFAULT[] = {
    CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD, CAP_NET_RAW, CAP_SETGID,
    CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL,
    CAP_AUDIT_WRITE};

static void die(const char *what) {
    fprintf(stderr, "proctor launch: %s: %s\n", what, strerror(errno));
    exit(125);
}

static unsigned long long kept_mask(int ptrace, int agent, int none) {
    unsigned long long mask = 0;
    if (none) return 0;
    for (size_t i = 0; i < sizeof DOCKER_DEFAULT / sizeof *DOCKER_DEFAULT; i++)
        mask |= 1ULL << DOCKER_DEFAULT[i];
    if (ptrace) mask |= 1ULL << CAP_SYS_PTRACE;
    if (agent) mask &= ~(1ULL << CAP_MKNOD);
    return mask;
}

/* The bounding and ambient sets cut down to `mask` (this takes CAP_SETPCAP: before any uid
   change or restrict_caps). */
static void restrict_bounding(unsigned long long mask) {
    for (int cap = 0; cap <= 63; cap++) {
        if (mask & (1ULL << cap)) continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL) break; /* past the kernel's last capability */
            die("dropping a capability from the bounding set");
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        die("clearing the ambient capabilities");
}

/* This process's own sets cut down to `mask`. */
static void restrict_caps(unsigned long long mask) {
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &head, data) < 0) die("capget");
    for (int i = 0; i < 2; i++) {
        unsigned int m = (unsigned int)(mask >> (32 * i));
        data[i].effective &= m;
        data[i].permitted &= m;
        data[i].inheritable &= m;
    }
    if (syscall(SYS_capset, &head, data) < 0) die("capset");
}

/* What Docker's default seccomp profile refuses a container without CAP_SYS_ADMIN, for a
   verifier started with --privileged (which runs without that profile): new namespaces,
   mounts, keyrings, BPF, perf, userfaultfd, io_uring, modules, kexec; clone3 is ENOSYS (its
   flags cannot be read), so the C library falls back to clone, whose flags are checked. */
static void install_filter(void) {
    static const int refused[] = {
        __NR_unshare, __NR_setns, __NR_mount, __NR_umount2, __NR_pivot_root,
        __NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
#ifdef __NR_mount_setattr
        __NR_mount_setattr,
#endif
        __NR_keyctl, __NR_add_key, __NR_request_key, __NR_bpf, __NR_perf_event_open,
        __NR_userfaultfd, __NR_kexec_load, __NR_kexec_file_load, __NR_init_module,
        __NR_finit_module, __NR_delete_module, __NR_open_by_handle_at, __NR_swapon,
        __NR_swapoff, __NR_reboot, __NR_syslog, __NR_acct, __NR_quotactl,
        __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register};
    enum { N = sizeof refused / sizeof *refused };
    const unsigned int ns_flags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
                                  CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;
    struct sock_filter f[N + 16];
    size_t n = 0;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
#endif
    for (size_t i = 0; i < N; i++) /* jump to the refusal below the list */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)refused[i],
                                              (unsigned char)(N - i + 3), 0);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 2, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* the refusal; clone with a namespace flag (the low half of its first argument) joins it */
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, ns_flags, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {(unsigned short)n, f};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) die("seccomp");
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* An O_PATH fd of `path`, walked from / without following any link. */
static int walk(const char *path) {
    int at = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (at < 0) die("open /");
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    for (char *part = strtok(copy, "/"); part; part = strtok(NULL, "/")) {
        int next = openat(at, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) die(path);
        close(at);
        at = next;
    }
    return at;
}

static void fd_path(char *buf, size_t size, int fd) { snprintf(buf, size, "/proc/self/fd/%d", fd); }

/* `from` bound on `to` (both walked without links), with no devices and no setuid. */
static void bind(const char *from, const char *to) {
    int src = walk(from), dst = walk(to);
    char a[64], b[64];
    fd_path(a, sizeof a, src);
    fd_path(b, sizeof b, dst);
    if (mount(a, b, NULL, MS_BIND, NULL) < 0) die(to);
    if (mount(NULL, to, NULL, MS_BIND | MS_REMOUNT | MS_NODEV | MS_NOSUID, NULL) < 0) die(to);
    close(src);
    close(dst);
}

static void cover(const char *dir, int readonly) {
    int at = walk(dir);
    char target[64];
    fd_path(target, sizeof target, at);
    if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0),
              "mode=0755,size=64k") < 0)
        die(dir);
    close(at);
}

/* The verifier's namespace (see --verify above); returns the fd of DIR/trace. */
static int verify_namespace(const char *dir) {
    char parent[256], path[512];
    if (strlen(dir) >= sizeof parent) {
        fprintf(stderr, "proctor launch: --verify DIR too long\n");
        exit(125);
    }
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent) {
        fprintf(stderr, "proctor launch: --verify needs DIR below a covered directory\n");
        exit(125);
    }
    *slash = 0;
    if (unshare(CLONE_NEWNS) < 0) die("unshare(CLONE_NEWNS) (needs CAP_SYS_ADMIN)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("making / private");
    if (umount2(parent, MNT_DETACH) < 0) die("lifting the cover");
    snprintf(path, sizeof path, "%s/trace", dir);
    int in = walk(dir);
    int trace = openat(in, "trace", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (trace < 0) die(path);
    close(in);
    snprintf(path, sizeof path, "%s/tests", dir);
    bind(path, "/tests");
    snprintf(path, sizeof path, "%s/logs", dir);
    bind(path, "/logs/verifier");
    cover(parent, 1);
    return trace;
}

static void copy_out(int from, int to, int *open_) {
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0) {
        if (n < 0 && errno == EINTR) return;
        *open_ = 0;
        return;
    }
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0) {
            if (errno == EINTR) continue;
            return; /* nobody reads ours any more: drop it */
        }
        off += w;
    }
}

static int run(int argc, char **argv) {
    const char *verify = NULL, *cwd = NULL;
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--verify") == 0 && i + 1 < argc) verify = argv[++i];
        else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) cwd = argv[++i];
    }
    if (i >= argc - 1) {
        fprintf(stderr, "usage: launch run [--verify DIR --cwd DIR] -- PROGRAM [ARG...]\n");
        return 125;
    }
    char **program = argv + i + 1;
    char trace_path[64] = "";
    if (verify) {
        snprintf(trace_path, sizeof trace_path, "/proc/%d/fd/%d", (int)getpid(),
                 verify_namespace(verify));
        for (char **p = program; *p; p++)
            if (strcmp(*p, "@TRACE@") == 0) *p = trace_path;
    }
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) die("pipe");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        if (verify) { /* the filter first: installing it without no_new_privs takes CAP_SYS_ADMIN */
            install_filter();
            restrict_bounding(kept_mask(1, 0, 0));
            restrict_caps(kept_mask(1, 0, 0));
        }
        if (dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(125);
        if (cwd && chdir(cwd) < 0) {
            fprintf(stderr, "proctor launch: %s: %s\n", cwd, strerror(errno));
            _exit(125);
        }
        execvp(program[0], program);
        fprintf(stderr, "proctor launch: %s: %s\n", program[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    signal(SIGPIPE, SIG_IGN); /* a reader gone: its output is dropped (the child keeps SIG_DFL) */
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_[2] = {1, 1}, status = 0, exited = 0;
    long long end = 0;
    while (open_[0] || open_[1]) {
        if (!exited && waitpid(child, &status, WNOHANG) == child) {
            exited = 1;
            end = now_ms() + GRACE_MS;
        }
        int wait_ms = exited ? (int)(end - now_ms()) : 20;
        if (exited && wait_ms <= 0) break;
        for (int k = 0; k < 2; k++) fds[k].fd = open_[k] ? (k ? err[0] : out[0]) : -1;
        if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) die("poll");
        for (int k = 0; k < 2; k++)
            if (open_[k] && (fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                copy_out(k ? err[0] : out[0], k ? 2 : 1, &open_[k]);
    }
    if (!exited && waitpid(child, &status, 0) < 0) die("waitpid");
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code;
}

/* This process moved into a new user namespace whose ids map one to one onto the parent's
   (the whole 32-bit range, as the parent sees it). Only a process still in the parent
   namespace, holding CAP_SETUID and CAP_SETGID there, may write such maps: a child forked
   for that, which never execs. */
static int enter_own_userns(int optional) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0) die("pipe");
    pid_t parent = getpid(), mapper = fork();
    if (mapper < 0) die("fork");
    if (mapper == 0) {
        char byte, path[64];
        close(ready[1]);
        if (read(ready[0], &byte, 1) != 1) _exit(1); /* the parent died, or failed to unshare */
        static const char *const maps[] = {"uid_map", "gid_map"};
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "/proc/%d/%s", (int)parent, maps[k]);
            int fd = open(path, O_WRONLY | O_CLOEXEC);
            static const char line[] = "0 0 4294967295\n";
            if (fd < 0 || write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) {
                fprintf(stderr, "proctor launch: writing %s: %s\n", path, strerror(errno));
                _exit(1);
            }
            close(fd);
        }
        _exit(0);
    }
    close(ready[0]);
    int entered = unshare(CLONE_NEWUSER) == 0;
    if (!entered && !optional) die("unshare(CLONE_NEWUSER)");
    if (entered && write(ready[1], "u", 1) != 1) die("pipe");
    close(ready[1]); /* not entered: the mapper reads nothing and leaves */
    int status;
    if (waitpid(mapper, &status, 0) < 0) die("waitpid");
    if (entered && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "proctor launch: could not map the user namespace's ids\n");
        exit(125);
    }
    return entered;
}

/* Into the user namespace of process `pid` (its owner's root, here, holds CAP_SYS_ADMIN
   there, which setns asks). */
static void join_userns(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/ns/user", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWUSER) < 0) die(path);
    close(fd);
}

/* The seccomp filter, unless one is there already. Installing it takes CAP_SYS_ADMIN (in
   the caller's user namespace) or no_new_privs. */
static void ensure_filter(void) {
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0) return;
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &head, data) < 0) die("capget");
    if (!(data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) &&
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die("no_new_privs");
    install_filter();
}

static int drop(int argc, char **argv) {
    long uid = -1, gid = -1, userns_of = -1;
    int none = 0, agent = 0, userns = 0, i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--uid") == 0 && i + 1 < argc) uid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--gid") == 0 && i + 1 < argc) gid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-caps") == 0) none = 1;
        else if (strcmp(argv[i], "--agent") == 0) agent = 1;
        else if (strcmp(argv[i], "--userns") == 0) userns = 1;
        else if (strcmp(argv[i], "--userns-if-allowed") == 0) userns = 2;
        else if (strcmp(argv[i], "--userns-of") == 0 && i + 1 < argc)
            userns_of = strtol(argv[++i], NULL, 10);
    }
    if (i >= argc - 1) {
        fprintf(stderr, "usage: launch drop [--agent [--userns|--userns-if-allowed|--userns-of PID]] "
                        "[--uid N --gid N] [--no-caps] -- PROGRAM\n");
        return 125;
    }
    if (agent && uid < 0 && geteuid() == 0) {
        if (userns_of > 0) join_userns(userns_of);
        else if (userns) enter_own_userns(userns == 2);
    }
    ensure_filter();
    unsigned long long mask = kept_mask(0, agent, none);
    restrict_bounding(mask);
    if (uid >= 0) {
        if (gid < 0) gid = uid;
        if (syscall(SYS_setgroups, 0, NULL) < 0) die("setgroups");
        if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0) die("setresgid");
        if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0) die("setresuid");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
    }
    restrict_caps(mask); /* (a uid other than 0 has none left but the inheritable set) */
    execvp(argv[i + 1], argv + i + 1);
    fprintf(stderr, "proctor launch: %s: %s\n", argv[i + 1], strerror(errno));
    return 127;
}

/* Whether a child may enter a user namespace of its own (`launch userns`). */
static int userns_check(void) {
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        if (unshare(CLONE_NEWUSER) < 0) {
            fprintf(stderr, "unshare(CLONE_NEWUSER): %s\n", strerror(errno));
            _exit(1);
        }
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) < 0) die("waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "run") == 0) return run(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "drop") == 0) return drop(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "userns") == 0) return userns_check();
    if (argc == 3 && strcmp(argv[1], "cover") == 0) {
        cover(argv[2], 1);
        return 0;
    }
    fprintf(stderr, "usage: launch run|drop|cover|userns ...\n");
    return 125;
}
