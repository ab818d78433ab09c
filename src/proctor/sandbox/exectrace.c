/* exectrace: record every program a command tree executes, from outside it.

   exectrace -o FILE [-w PER,TOTAL] -- PROGRAM [ARG...]

   Runs PROGRAM under ptrace with a seccomp filter that stops a process only at execve and
   execveat (and, with -w, at a write to fd 1 or 2 and a dup onto one); forks, clones, execs and exits arrive as
   ptrace events. Nothing else stops anything: a program's threads run at full speed (strace
   --seccomp-bpf restarts every new thread with a stop at each of its system calls until that
   thread itself calls a traced one, which costs a many-threaded agent such as Codex or Claude
   Code several times its run time).

   The trace format (a contract: sandbox/trace.py reads it, and so may other tracers). One
   event per line, in the order the tracer saw them; PID is a thread or process id as this
   process sees them; TIME is unix time, seconds with microseconds; strings are JSON strings
   in which every byte outside printable ASCII is written \u00XX, so a reader that maps each
   character back to one byte (Latin-1) gets the exact bytes:

     S PID TIME                   the top process
     F PARENT CHILD               a fork, vfork or clone (threads included), written before
                                  anything the child does
     E PID TIME ["ARG",...]       an exec that succeeded, with the argv its caller gave it
                                  (read at the attempt) if the new program got those very
                                  arguments (read at the exec event, before it ran, with no
                                  thread of the old program left), else the argv it got: a
                                  thread rewriting the argv during the exec cannot hide what
                                  ran. (A script gets its interpreter and its own path in
                                  place of argv[0]: the arguments after argv[0] must match.)
     P PID "FILE" N               right after E: the file the program was loaded from, as
                                  the kernel names it (/proc/PID/exe: symlinks resolved; a
                                  script's interpreter), whatever argv[0] says; N: how many
                                  leading arguments of the argv that file stands for (1; for
                                  the dynamic loader run as a program, `ld.so [OPTIONS]
                                  PROGRAM ARGS`, FILE is PROGRAM as its path named it at
                                  the exec, and N counts the loader, its options and PROGRAM). A program
                                  outside the system program directories (SYSTEM_DIRS below)
                                  — a copy under another name, a memfd or deleted file run by
                                  fexecve — is named by the file of the same content in one of
                                  them when there is one, else as the kernel names it
                                  ("/workspace/cleaner", "/memfd:NAME (deleted)")
     O PID "FD1" "FD2"            with -w, right after E (and P): where that program's fd 1 and fd 2
                                  point (readlink of /proc/PID/fd/N: "pipe:[INODE]",
                                  "/dev/pts/0", a path; "" when closed)
     W PID FD N "TARGET" "DATA"   with -w: a write(2), writev, pwrite64, pwritev or pwritev2
                                  to fd 1 or 2 that wrote N > 0 bytes to TARGET (as in O);
                                  DATA is what was kept of them, a prefix: at most PER bytes
                                  per process (thread) and TOTAL in all (N - its length were
                                  dropped)
     D PID NEWFD OLDFD            with -w: NEWFD became a copy of OLDFD, one of them 1 or 2
                                  (dup2, dup3, dup, fcntl F_DUPFD; `cmd >&2` in a shell is
                                  D PID 1 2), so a reader can tell which of a program's
                                  original fds a write went to even where fd 1 and 2 point
                                  to one place
     X PID CODE TIME              a process or thread exited
     K PID SIGNAL TIME            ... was killed by a signal
     Z TIME                       the end: every traced process is gone

   The trace is complete when it holds the top process's X or K line, which is written only
   if every line before it was. Lines are flushed whenever the tracer waits, so a tracer
   killed while the command hangs loses nothing it saw. exectrace exits as the top process
   did, as soon as it did (once its line is written, and when it left nothing running, once
   the Z line is too: then the trace is whole when its end is known); what the top left
   running (a server started in the background) stays traced by a child of exectrace, its
   lines appended until it ends. If the tracer dies, the kernel kills every traced process
   (PTRACE_O_EXITKILL). A process that escapes tracing (clone with CLONE_UNTRACED)
   keeps the filter and cannot exec at all: its execve fails with ENOSYS. Syscalls through a
   foreign ABI (int 0x80 on x86_64) are refused (EPERM), and so are the keyring calls
   (add_key, request_key, keyctl): keyrings belong to a uid, not a sandbox.
   ptrace(PTRACE_TRACEME) returns 0 and does nothing, as where nothing traces the process (an
   anti-debugger check passes); the process stays traced here (/proc/PID/status's TracerPid
   still names the tracer, and a debugger such as gdb or strace still cannot attach).

   With -w, sendfile, splice, tee and copy_file_range to fd 1 or 2 fail with ENOSYS (their
   bytes never pass through the process's memory, so they could not be kept; programs fall
   back to write). Not seen by -w: output through io_uring or a shared mapping of the
   target file, and an fd 1 or 2 reopened after close keeps the identity of the old one. */

#define _GNU_SOURCE
#include "exectrace.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)  /* NATIVE_ARCH, X32_BIT: exectrace.h */
#define ARG(r, i) ((i) == 0 ? (r).rdi : (i) == 1 ? (r).rsi : (r).rdx)
#define RETVAL(r) ((int64_t)(r).rax)
typedef struct user_regs_struct regs_t;
#elif defined(__aarch64__)
#define ARG(r, i) ((r).regs[i])
#define RETVAL(r) ((int64_t)(r).regs[0])
typedef struct user_pt_regs regs_t;
#else
#error "exectrace supports x86_64 and aarch64"
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp filter reads the low half of a 64-bit argument first"
#endif

#define DATA_EXECVE 1
#define DATA_EXECVEAT 5
#define DATA_WRITE 2  /* write, pwrite64: (fd, buf, count) */
#define DATA_WRITEV 3 /* writev, pwritev, pwritev2, vmsplice: (fd, iov, iovcnt) */
#define DATA_DUP 4    /* dup2, dup3, dup, fcntl F_DUPFD: (oldfd, ...) -> newfd */
#define MAX_ARG 65536      /* bytes kept of one argument */
#define MAX_ARGS 4096      /* arguments kept of one argv */
#define MAX_CMDLINE (1 << 21) /* bytes read of one argv */
#define MAX_IOV 1024       /* IOV_MAX */

static FILE *out;
static int proc_dir = -1; /* where /proc/PID/... is read: -1, "/proc"; else that directory */

/* The path of `what` (e.g. "exe") of process `pid`, for openat/readlinkat at `proc_at()`. */
static void proc_path(char *buf, size_t len, pid_t pid, const char *what) {
    snprintf(buf, len, proc_dir < 0 ? "/proc/%d/%s" : "%d/%s", pid, what);
}
static int proc_at(void) { return proc_dir < 0 ? AT_FDCWD : proc_dir; }
static int out_failed; /* a line could not be written: the trace stays incomplete */
static int capture;    /* -w given */
static size_t per_task_limit, total_limit, total_kept;

/* An argv: its arguments as NUL-terminated strings one after the other in `s`, each cut
   at MAX_ARG bytes, at most MAX_ARGS of them, MAX_CMDLINE bytes in all. */
struct args {
    char *s;
    size_t len, cap;
    int n;
};

/* What is known of a task: whether its parent's fork event has been written; whether it is
   held at its first stop until that is so (a child's first stop can arrive before its
   parent's fork event: its F line comes first all the same); a write it is in the middle of
   (between the seccomp stop and the syscall-exit stop); what was kept of its writes. */
struct task {
    pid_t pid;
    int announced, parked;
    struct args asked; /* the argv of its exec attempt */
    int pending; /* 0, or the DATA_ kind of a call whose exit is awaited */
    uint64_t args[3];
    char target[PATH_MAX];
    size_t kept;
    struct task *next;
};
static struct task *tasks;

static struct task *task(pid_t pid, int create) {
    for (struct task *t = tasks; t; t = t->next)
        if (t->pid == pid) return t;
    if (!create) return NULL;
    struct task *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->pid = pid;
    t->next = tasks;
    tasks = t;
    return t;
}

static void forget(pid_t pid) {
    for (struct task **pp = &tasks; *pp; pp = &(*pp)->next)
        if ((*pp)->pid == pid) {
            struct task *t = *pp;
            *pp = t->next;
            free(t->asked.s);
            free(t);
            return;
        }
}

/* -- writing the trace ------------------------------------------------------------------ */

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(out, fmt, ap) < 0) out_failed = 1;
    va_end(ap);
}

static void now(char *buf, size_t len) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) < 0) ts.tv_sec = ts.tv_nsec = 0;
    snprintf(buf, len, "%lld.%06ld", (long long)ts.tv_sec, ts.tv_nsec / 1000);
}

/* Bytes as a JSON string: printable ASCII as it is, everything else \u00XX. */
static void put_bytes(const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    char buf[4096];
    size_t used = 0;
    if (putc_unlocked('"', out) == EOF) out_failed = 1;
    for (size_t i = 0; i < n; i++) {
        if (used > sizeof buf - 8) {
            if (fwrite(buf, 1, used, out) != used) out_failed = 1;
            used = 0;
        }
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            buf[used++] = '\\';
            buf[used++] = (char)c;
        } else if (c < 0x20 || c > 0x7e) {
            memcpy(buf + used, "\\u00", 4);
            buf[used + 4] = hex[c >> 4];
            buf[used + 5] = hex[c & 15];
            used += 6;
        } else {
            buf[used++] = (char)c;
        }
    }
    if (used && fwrite(buf, 1, used, out) != used) out_failed = 1;
    if (putc_unlocked('"', out) == EOF) out_failed = 1;
}

static void put_text(const char *s) { put_bytes((const unsigned char *)s, strlen(s)); }

/* -- reading the tracee ----------------------------------------------------------------- */

/* Reads up to len bytes of the tracee's memory at addr, never across an unmapped page. */
static size_t peek(pid_t pid, uint64_t addr, void *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        size_t page_left = 4096 - ((addr + done) & 4095);
        size_t want = len - done < page_left ? len - done : page_left;
        struct iovec local = {(char *)buf + done, want};
        struct iovec remote = {(void *)(uintptr_t)(addr + done), want};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        done += (size_t)n;
    }
    return done;
}

/* Where /proc/PID/fd/FD points, or "" (closed, or the process is gone). */
static void fd_target(pid_t pid, int fd, char *buf, size_t len) {
    char path[64], what[32];
    snprintf(what, sizeof what, "fd/%d", fd);
    proc_path(path, sizeof path, pid, what);
    ssize_t n = readlinkat(proc_at(), path, buf, len - 1);
    buf[n > 0 ? n : 0] = 0;
}

static void add_arg(struct args *a, const char *s, size_t n) {
    if (n > MAX_ARG) n = MAX_ARG;
    if (a->len + n + 1 > a->cap) {
        a->cap = (a->len + n + 1) * 2;
        a->s = realloc(a->s, a->cap);
        if (!a->s) abort();
    }
    memcpy(a->s + a->len, s, n);
    a->s[a->len + n] = 0;
    a->len += n + 1;
    a->n++;
}

/* The argv an exec was asked for, read from the caller's memory at its seccomp stop. */
static void args_from_memory(pid_t pid, uint64_t argv, struct args *a) {
    char *arg = malloc(MAX_ARG);
    if (!arg) abort();
    for (int i = 0; i < MAX_ARGS && a->len < MAX_CMDLINE; i++) {
        uint64_t ptr = 0;
        if (peek(pid, argv + 8 * (uint64_t)i, &ptr, 8) != 8 || ptr == 0) break;
        size_t len = 0;
        while (len < MAX_ARG) {
            size_t want = MAX_ARG - len < 512 ? MAX_ARG - len : 512;
            size_t n = peek(pid, ptr + len, arg + len, want);
            char *end = n ? memchr(arg + len, 0, n) : NULL;
            if (end) { len = (size_t)(end - arg); break; }
            len += n;
            if (n < want) break;
        }
        add_arg(a, arg, len);
    }
    free(arg);
}

/* The argv a program got, from /proc/PID/cmdline at its exec event: before it ran a single
   instruction, with no other thread left that could change it. */
static void args_from_proc(pid_t pid, struct args *a) {
    char path[64];
    proc_path(path, sizeof path, pid, "cmdline");
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    if (!s) abort();
    int fd = openat(proc_at(), path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        for (;;) {
            if (len == cap) {
                if (cap >= MAX_CMDLINE) break;
                cap *= 2;
                s = realloc(s, cap);
                if (!s) abort();
            }
            ssize_t n = read(fd, s + len, cap - len);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            len += (size_t)n;
        }
        close(fd);
    }
    for (size_t start = 0; start < len && a->n < MAX_ARGS;) {
        char *end = memchr(s + start, 0, len - start);
        size_t n = end ? (size_t)(end - (s + start)) : len - start;
        add_arg(a, s + start, n);
        start += n + 1;
    }
    free(s);
}

/* Argument i of a (0-based). */
static const char *arg_at(const struct args *a, int i) {
    const char *p = a->s;
    while (i-- > 0) p += strlen(p) + 1;
    return p;
}

/* Whether the program got what the caller asked for: the same argv, or, for a script (the
   kernel puts the interpreter and the script's path in front, in place of argv[0]), the
   same arguments after argv[0]. */
static int same_args(const struct args *asked, const struct args *got) {
    if (asked->n == 0 || got->n < asked->n) return 0;
    int skip = got->n - asked->n, from = skip == 0 ? 0 : 1;
    for (int i = from; i < asked->n; i++)
        if (strcmp(arg_at(asked, i), arg_at(got, i + skip)) != 0) return 0;
    return 1;
}

static void put_args(const struct args *a) {
    if (putc_unlocked('[', out) == EOF) out_failed = 1;
    const char *p = a->s;
    for (int i = 0; i < a->n; i++) {
        size_t n = strlen(p);
        if (i && putc_unlocked(',', out) == EOF) out_failed = 1;
        put_bytes((const unsigned char *)p, n);
        p += n + 1;
    }
    if (putc_unlocked(']', out) == EOF) out_failed = 1;
}

/* Where a copy of a system program is looked for (SPEC §2: a program matches by the name
   of the file it executed, also when it runs as a copy under another name). */
static const char *const SYSTEM_DIRS[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                          "/usr/bin", "/sbin", "/bin", NULL};

/* The regular files of SYSTEM_DIRS by size, listed once per tracer, when first needed. */
struct system_file {
    off_t size;
    dev_t dev;
    ino_t ino;
    char *path;
    size_t name_len; /* of its base name */
};
static struct system_file *system_files;
static size_t system_count;
static int system_listed;

static void list_system_files(void) {
    size_t cap = 0;
    system_listed = 1;
    for (int d = 0; SYSTEM_DIRS[d]; d++) {
        DIR *dir = opendir(SYSTEM_DIRS[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            struct stat st;
            if (fstatat(dirfd(dir), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode)) continue;
            if (system_count == cap) {
                cap = cap ? cap * 2 : 1024;
                system_files = realloc(system_files, cap * sizeof *system_files);
                if (!system_files) abort();
            }
            size_t n = strlen(SYSTEM_DIRS[d]) + strlen(e->d_name) + 2;
            char *path = malloc(n);
            if (!path) abort();
            snprintf(path, n, "%s/%s", SYSTEM_DIRS[d], e->d_name);
            system_files[system_count++] = (struct system_file){
                st.st_size, st.st_dev, st.st_ino, path, strlen(e->d_name)};
        }
        closedir(dir);
    }
}

/* Whether the files open at fd a and b hold the same `size` bytes. */
static int same_bytes(int a, int b, off_t size) {
    static char x[65536], y[65536];
    for (off_t at = 0; at < size;) {
        size_t want = size - at < (off_t)sizeof x ? (size_t)(size - at) : sizeof x;
        ssize_t n = pread(a, x, want, at), m = pread(b, y, want, at);
        if (n <= 0 || n != m || memcmp(x, y, (size_t)n) != 0) return 0;
        at += n;
    }
    return 1;
}

/* The system program an executable outside SYSTEM_DIRS is a copy of (a memfd, a deleted
   file, a copy under another name): its path into `buf`, else `buf` unchanged. Of several
   with that content (git's hard links: git, git-upload-pack, ...), the shortest name. Only
   files of the very same size are compared; a hard link of one is one without reading. */
static void identify(int at, const char *exe, char *buf, size_t size) {
    int fd = openat(at, exe, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) { close(fd); return; }
    if (!system_listed) list_system_files();
    const struct system_file *best = NULL;
    for (size_t i = 0; i < system_count; i++) {
        const struct system_file *f = &system_files[i];
        if (f->size != st.st_size || (best && f->name_len >= best->name_len)) continue;
        int same = f->dev == st.st_dev && f->ino == st.st_ino;
        if (!same) {
            int cand = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            if (cand < 0) continue;
            same = same_bytes(fd, cand, st.st_size);
            close(cand);
        }
        if (same) best = f;
    }
    if (best) snprintf(buf, size, "%s", best->path);
    close(fd);
}

/* Whether `path` names a file directly in one of SYSTEM_DIRS. */
static int in_system_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    for (int d = 0; slash && SYSTEM_DIRS[d]; d++) {
        size_t n = strlen(SYSTEM_DIRS[d]);
        if ((size_t)(slash - path) == n && !strncmp(path, SYSTEM_DIRS[d], n)) return 1;
    }
    return 0;
}

/* Whether `path` is the dynamic loader (ld.so), which runs the program it is given. */
static int is_loader(const char *path) {
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    return !strncmp(name, "ld-linux", 8) || !strncmp(name, "ld.so", 5) ||
           !strncmp(name, "ld64.so", 7) || (!strncmp(name, "ld-", 3) && strstr(name, ".so"));
}

/* The loader's options that take a value (ld.so --help). */
static const char *const LOADER_VALUE_OPTIONS[] = {
    "--library-path", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask", "--inhibit-rpath",
    "--audit", "--preload", "--argv0", NULL};

/* The index in `got` of the program the loader is asked to run, or 0 (none: --list...). */
static int loaded_program(const struct args *got) {
    for (int i = 1; i < got->n;) {
        const char *a = arg_at(got, i);
        if (strncmp(a, "--", 2) != 0) return i;
        int value = 0;
        for (int k = 0; LOADER_VALUE_OPTIONS[k]; k++) value |= !strcmp(a, LOADER_VALUE_OPTIONS[k]);
        i += 1 + value;
    }
    return 0;
}

/* The file process pid executed (see P in the format), and how many of its arguments `got`
   that file stands for (`*lead`: 1, or for the loader run as a program, the loader, its
   options and the program's path). */
static void executed_file(pid_t pid, const struct args *got, char *buf, size_t size,
                          int *lead) {
    char exe[64];
    proc_path(exe, sizeof exe, pid, "exe");
    ssize_t n = readlinkat(proc_at(), exe, buf, size - 1);
    buf[n > 0 ? n : 0] = 0;
    *lead = 1;
    int i = n > 0 && is_loader(buf) ? loaded_program(got) : 0;
    if (i > 0) {  /* ld.so PROGRAM ARGS: the program, as its path names it now */
        const char *program = arg_at(got, i);
        char path[2 * PATH_MAX + 64], real[PATH_MAX], cwd[PATH_MAX], link[64];
        ssize_t m = 0;
        if (program[0] == '/') snprintf(path, sizeof path, "%s", program);
        else if (proc_dir < 0) snprintf(path, sizeof path, "/proc/%d/cwd/%s", pid, program);
        else {  /* what realpath does with /proc/PID/cwd: its link, then the rest */
            proc_path(link, sizeof link, pid, "cwd");
            m = readlinkat(proc_dir, link, cwd, sizeof cwd - 1);
            cwd[m > 0 ? m : 0] = 0;
            snprintf(path, sizeof path, "%s/%s", cwd, program);
        }
        if (m >= 0 && realpath(path, real)) {
            snprintf(buf, size, "%s", real);
            *lead = i + 1;
            if (!in_system_dir(buf)) identify(AT_FDCWD, real, buf, size);
            return;
        }
    }
    if (n > 0 && !in_system_dir(buf)) identify(proc_at(), exe, buf, size);
}

static void on_exec_attempt(pid_t pid, unsigned long which) {
    regs_t regs;
    struct iovec io = {&regs, sizeof regs};
    if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &io) < 0) return;
    struct task *t = task(pid, 1);
    free(t->asked.s);
    memset(&t->asked, 0, sizeof t->asked);
    args_from_memory(pid, which == DATA_EXECVEAT ? ARG(regs, 2) : ARG(regs, 1), &t->asked);
}

static void on_exec_done(pid_t pid) {
    unsigned long former = (unsigned long)pid; /* a thread that exec'd takes the leader's pid */
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) < 0) former = (unsigned long)pid;
    struct task *t = task((pid_t)former, 0);
    struct args got = {0};
    args_from_proc(pid, &got);
    char when[32];
    now(when, sizeof when);
    line("E %d %s ", pid, when);
    put_args(t && same_args(&t->asked, &got) ? &t->asked : &got);
    line("\n");
    if (t) {
        free(t->asked.s);
        memset(&t->asked, 0, sizeof t->asked);
    }
    char file[PATH_MAX];
    int lead;
    executed_file(pid, &got, file, sizeof file, &lead);
    line("P %d ", pid);
    put_text(file);
    line(" %d\n", lead);
    free(got.s);
    if (capture) {
        char fd1[PATH_MAX], fd2[PATH_MAX];
        fd_target(pid, 1, fd1, sizeof fd1);
        fd_target(pid, 2, fd2, sizeof fd2);
        line("O %d ", pid);
        put_text(fd1);
        line(" ");
        put_text(fd2);
        line("\n");
    }
}

static int get_regs(pid_t pid, regs_t *regs) {
    struct iovec io = {regs, sizeof *regs};
    return (int)ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &io);
}

/* A write to fd 1 or 2, or a dup onto one, is about to happen: note it, to see at its exit
   what it did. Returns whether to stop the task at that exit. */
static int on_call_entry(pid_t pid, int kind) {
    regs_t regs;
    if (get_regs(pid, &regs) < 0) return 0;
    struct task *t = task(pid, 1);
    t->pending = kind;
    t->args[0] = ARG(regs, 0);
    t->args[1] = ARG(regs, 1);
    t->args[2] = ARG(regs, 2);
    if (kind != DATA_DUP) fd_target(pid, (int)t->args[0], t->target, sizeof t->target);
    return 1;
}

/* The bytes a write wrote (`written` of them): from its buffer, or its iovec array. */
static size_t written_bytes(pid_t pid, int kind, const struct task *t, unsigned char *data,
                            size_t want) {
    if (kind == DATA_WRITE) return peek(pid, t->args[1], data, want);
    struct iovec iov[MAX_IOV];
    size_t n = t->args[2] < MAX_IOV ? (size_t)t->args[2] : MAX_IOV, got = 0;
    size_t have = peek(pid, t->args[1], iov, n * sizeof iov[0]) / sizeof iov[0];
    for (size_t i = 0; i < have && got < want; i++) {
        size_t part = iov[i].iov_len < want - got ? iov[i].iov_len : want - got;
        size_t read = peek(pid, (uint64_t)(uintptr_t)iov[i].iov_base, data + got, part);
        got += read;
        if (read < part) break;
    }
    return got;
}

static void on_call_exit(pid_t pid) {
    struct task *t = task(pid, 0);
    regs_t regs;
    if (!t || !t->pending) return;
    int kind = t->pending;
    t->pending = 0;
    if (get_regs(pid, &regs) < 0) return;
    int64_t result = RETVAL(regs);
    if (kind == DATA_DUP) {
        if (result >= 0) line("D %d %d %d\n", pid, (int)result, (int)t->args[0]);
        return;
    }
    if (result <= 0) return;
    size_t room = per_task_limit - t->kept;
    if (total_limit - total_kept < room) room = total_limit - total_kept;
    size_t want = (uint64_t)result < room ? (size_t)result : room, got = 0;
    unsigned char *data = want ? malloc(want) : NULL;
    if (want && !data) abort();
    if (want) got = written_bytes(pid, kind, t, data, want);
    t->kept += got;
    total_kept += got;
    line("W %d %d %lld ", pid, (int)t->args[0], (long long)result);
    put_text(t->target);
    line(" ");
    put_bytes(data, got);
    line("\n");
    free(data);
}

/* -- the filter ------------------------------------------------------------------------- */

/* A seccomp program with forward jumps to labels, resolved once it is complete. Each of
   the two (with and without capture) is assembled once per process that asks, or once in
   the spawner before it forks (prepare_filters): a tracer only installs it (filter_self). */
enum { L_PLAIN, L_VECTOR, L_DUP2, L_DUP2_NEW, L_DUP, L_FCNTL, L_TRACE_DUP, L_REFUSE0,
       L_REFUSE1, L_REFUSE2, L_ALLOW, N_LABELS };
static struct sock_filter progs[2][112], *prog;
static int prog_n, label_at[N_LABELS], jump_from[48], jump_to[48], jumps;
static struct sock_fprog assembled[2];  /* [capture]; len 0: not assembled yet */

static void op(struct sock_filter f) { prog[prog_n++] = f; }
static void here(int label) { label_at[label] = prog_n; }
/* if A == k (or A > k, `gt`) go to label, else on */
static void jump_if(int gt, uint32_t k, int label) {
    jump_from[jumps] = prog_n;
    jump_to[jumps++] = label;
    op((struct sock_filter)BPF_JUMP(BPF_JMP | (gt ? BPF_JGT : BPF_JEQ) | BPF_K, k, 0, 0));
}
static void load(uint32_t offset) { op((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
static void ret(uint32_t v) { op((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, v)); }
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i)) /* little-endian */

/* Continues with A = the syscall number unless fd argument `i` (its low half: the kernel
   reads an fd as an unsigned int) is 1 or 2. */
static void unless_fd_1_or_2(int i, int otherwise) {
    load(ARG_LOW(i));
    jump_if(1, 2, otherwise);
    jump_if(0, 0, otherwise);
}

static void assemble(int with_capture) {
    prog = progs[with_capture];
    prog_n = jumps = 0;
    load(offsetof(struct seccomp_data, arch));
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0));
    ret(SECCOMP_RET_ERRNO | EPERM);
    load(offsetof(struct seccomp_data, nr));
#ifdef X32_BIT
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1));
    ret(SECCOMP_RET_ERRNO | EPERM);
#endif
    /* Keyrings are per user, not per sandbox: refused, as the spawner refuses them. */
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_add_key, 2, 0));
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_request_key, 1, 0));
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_keyctl, 0, 1));
    ret(SECCOMP_RET_ERRNO | EPERM);
    /* ptrace(PTRACE_TRACEME) succeeds without doing anything, as it does where nothing
       traces the process: the program stays traced by this tracer (a second tracer is
       impossible anyway, so the real call could only fail with EPERM), but an anti-debugger
       check (`if (ptrace(PTRACE_TRACEME, 0, 0, 0) == -1) exit(1);`, Terminal-Bench's
       vulnerable-secret) sees the world it would see outside proctor. */
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 6));
    load(ARG_LOW(0));
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_TRACEME, 0, 3));
    load(ARG_LOW(0) + 4);
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
    ret(SECCOMP_RET_ERRNO | 0); /* errno 0: the call returns 0 */
    load(offsetof(struct seccomp_data, nr));
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1));
    ret(SECCOMP_RET_TRACE | DATA_EXECVE);
    op((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1));
    ret(SECCOMP_RET_TRACE | DATA_EXECVEAT);
    if (with_capture) {
        jump_if(0, __NR_write, L_PLAIN);
        jump_if(0, __NR_pwrite64, L_PLAIN);
        jump_if(0, __NR_writev, L_VECTOR);
        jump_if(0, __NR_pwritev, L_VECTOR);
        jump_if(0, __NR_pwritev2, L_VECTOR);
        jump_if(0, __NR_vmsplice, L_VECTOR);
#ifdef __NR_dup2
        jump_if(0, __NR_dup2, L_DUP2);
#endif
        jump_if(0, __NR_dup3, L_DUP2);
        jump_if(0, __NR_dup, L_DUP);
        jump_if(0, __NR_fcntl, L_FCNTL);
        /* Output that never passes through this process's memory cannot be captured: to
           fd 1 or 2 these fail as if the kernel lacked them, and programs fall back to
           write (cat, for one, tries copy_file_range first). */
        jump_if(0, __NR_sendfile, L_REFUSE0);
        jump_if(0, __NR_tee, L_REFUSE1);
        jump_if(0, __NR_copy_file_range, L_REFUSE2);
        jump_if(0, __NR_splice, L_REFUSE2);
        ret(SECCOMP_RET_ALLOW);
        here(L_PLAIN);
        unless_fd_1_or_2(0, L_ALLOW);
        ret(SECCOMP_RET_TRACE | DATA_WRITE);
        here(L_VECTOR);
        unless_fd_1_or_2(0, L_ALLOW);
        ret(SECCOMP_RET_TRACE | DATA_WRITEV);
        /* Copies from or onto fd 1 and 2: dup2/dup3(old, new) with either one 1 or 2;
           dup(old) and fcntl(old, F_DUPFD[_CLOEXEC]) with old 1 or 2 (how a shell saves
           fd 1 before `cmd >&2`, to put it back after). */
        here(L_DUP2);
        unless_fd_1_or_2(0, L_DUP2_NEW);
        ret(SECCOMP_RET_TRACE | DATA_DUP);
        here(L_DUP2_NEW);
        unless_fd_1_or_2(1, L_ALLOW);
        ret(SECCOMP_RET_TRACE | DATA_DUP);
        here(L_DUP);
        unless_fd_1_or_2(0, L_ALLOW);
        ret(SECCOMP_RET_TRACE | DATA_DUP);
        here(L_FCNTL);
        unless_fd_1_or_2(0, L_ALLOW);
        load(ARG_LOW(1));
        jump_if(0, F_DUPFD, L_TRACE_DUP);
        jump_if(0, F_DUPFD_CLOEXEC, L_TRACE_DUP);
        ret(SECCOMP_RET_ALLOW);
        here(L_TRACE_DUP);
        ret(SECCOMP_RET_TRACE | DATA_DUP);
        here(L_REFUSE0);
        unless_fd_1_or_2(0, L_ALLOW);
        ret(SECCOMP_RET_ERRNO | ENOSYS);
        here(L_REFUSE1);
        unless_fd_1_or_2(1, L_ALLOW);
        ret(SECCOMP_RET_ERRNO | ENOSYS);
        here(L_REFUSE2);
        unless_fd_1_or_2(2, L_ALLOW);
        ret(SECCOMP_RET_ERRNO | ENOSYS);
    }
    here(L_ALLOW);
    ret(SECCOMP_RET_ALLOW);
    for (int j = 0; j < jumps; j++)
        prog[jump_from[j]].jt = (unsigned char)(label_at[jump_to[j]] - jump_from[j] - 1);
    assembled[with_capture] = (struct sock_fprog){(unsigned short)prog_n, prog};
}

void prepare_filters(void) {
    for (int c = 0; c < 2; c++)
        if (!assembled[c].len) assemble(c);
}

int install_filter(void) { return install_filter_variant(capture); }

/* Whether fds 0-2 are /dev/null already: once per tracer (trace_tree), or by its caller. */
static int stdio_detached;

int filter_self(int with_capture) {
    if (install_filter_variant(with_capture) < 0) return -1;
    stdio_detached = 1;  /* a dup2 onto fd 1 or 2 would now stop at the filter: ENOSYS */
    return 0;
}

int install_filter_variant(int with_capture) {
    with_capture = with_capture != 0;
    if (!assembled[with_capture].len) assemble(with_capture);
    struct sock_fprog fprog = assembled[with_capture];
    /* Without privileges a filter needs no_new_privs; with them, leave setuid programs be. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0) return 0;
    if (errno != EACCES) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
}

/* -- the loop --------------------------------------------------------------------------- */

static int is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Resumes a stopped task. ESRCH: it died meanwhile (waitpid reports it). Anything else
   would leave it stopped for ever: it is killed, and the trace says nothing false. */
static void resume(pid_t pid, enum __ptrace_request how, int sig) {
    if (ptrace(how, pid, 0, (void *)(long)sig) < 0 && errno != ESRCH) {
        out_failed = 1;
        kill(pid, SIGKILL);
    }
}

/* Whether the tracer has no tracee left (nothing more can come). */
static int nothing_left(void) {
    siginfo_t si;
    return waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) < 0 &&
           errno == ECHILD;
}

void trace_proc(int dir) { proc_dir = dir; }

/* exectrace's own report: how the top ended, a wait status, written on its pipe to the
   first process (main). 0, or -1. */
static int report_pipe = -1;
static int put_status(int st) {
    return write(report_pipe, &st, sizeof st) == (ssize_t)sizeof st ? 0 : -1;
}

void trace_to(FILE *file, int capture_writes, size_t per_task, size_t total) {
    /* A tracer may trace one tree after another (the spawner's): nothing of the last one
       is carried into the next: its tasks, what was kept of its writes, whether a line was
       lost, the system programs listed for it (the next tree's box may hold others). */
    while (tasks) forget(tasks->pid);
    for (size_t i = 0; i < system_count; i++) free(system_files[i].path);
    free(system_files);
    system_files = NULL;
    system_count = 0;
    system_listed = 0;
    out_failed = 0;
    total_kept = 0;
    out = file;
    capture = capture_writes;
    per_task_limit = per_task;
    total_limit = total;
}

/* The tracer's side, once `top` is forked and waits on `go` for the filter and its exec:
   seize it, let it go, follow it and everything it starts until all are gone (the top's end
   said by `top_ended` as a wait status), then the Z line. A top that left nothing running
   is said after the Z line, so the trace is whole when its end is known: by `top_ended`, or
   with `last` in *last (-1: said already, or never known). Returns the tracer's exit code. */
int trace(pid_t top, int go, int report) {
    report_pipe = report;
    int failed = trace_tree(top, go, put_status, NULL);
    close(report);
    return failed;
}

int trace_tree(pid_t top, int go, int (*top_ended)(int status), int *last) {
    if (last) *last = -1;
    long opts = PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK |
                PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL |
                PTRACE_O_TRACESYSGOOD;
    if (ptrace(PTRACE_SEIZE, top, 0, (void *)opts) < 0) {
        perror("exectrace: ptrace");
        kill(top, SIGKILL);
        fclose(out);
        return 2;
    }
    char t[32];
    now(t, sizeof t);
    line("S %d %s\n", top, t);
    if (write(go, "g", 1) != 1) { kill(top, SIGKILL); fclose(out); return 2; }
    close(go);
    /* The command's output is its own: the tracer holds none of its descriptors open
       (a tracer that traces one tree after another: once). */
    if (!stdio_detached) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
            if (dup2(null, fd) < 0) out_failed = 1;
        if (null > 2) close(null);
        stdio_detached = null >= 0;
    }
    int top_status = -1;  /* how the top ended, once it has */
    int said = 0;         /* ... and top_ended was told */
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, __WALL | WNOHANG);
        if (pid == 0) { /* nothing to do: what was seen is written before waiting */
            if (fflush(out) != 0) out_failed = 1;
            pid = waitpid(-1, &st, __WALL);
        }
        if (pid < 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD: every traced process is gone */
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            /* The top's line vouches for every line before it: those are flushed first. */
            int failed_before = pid == top && (fflush(out) != 0 || out_failed || ferror(out));
            now(t, sizeof t);
            if (!failed_before) {
                if (WIFEXITED(st)) line("X %d %d %s\n", pid, WEXITSTATUS(st), t);
                else line("K %d %d %s\n", pid, WTERMSIG(st), t);
            }
            forget(pid);
            if (pid == top) { /* written down: the first process may now end as it did */
                top_status = st;
                if (nothing_left()) break;
                if (fflush(out) != 0) out_failed = 1;
                if (top_ended(st) < 0) out_failed = 1;
                said = 1;
            }
            continue;
        }
        if (!WIFSTOPPED(st)) continue;
        int sig = WSTOPSIG(st), event = st >> 16, inject = 0;
        enum __ptrace_request how = PTRACE_CONT;
        unsigned long msg;
        switch (event) {
        case PTRACE_EVENT_SECCOMP:
            if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) < 0) break;
            if (msg == DATA_EXECVE || msg == DATA_EXECVEAT) on_exec_attempt(pid, msg);
            else if ((msg == DATA_WRITE || msg == DATA_WRITEV || msg == DATA_DUP) &&
                on_call_entry(pid, (int)msg))
                how = PTRACE_SYSCALL; /* next stop: this call's exit */
            break;
        case PTRACE_EVENT_EXEC:
            on_exec_done(pid);
            break;
        case PTRACE_EVENT_FORK:
        case PTRACE_EVENT_VFORK:
        case PTRACE_EVENT_CLONE:
            if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0) {
                line("F %d %lu\n", pid, msg);
                struct task *c = task((pid_t)msg, 1);
                c->announced = 1;
                if (c->parked) {
                    c->parked = 0;
                    resume((pid_t)msg, PTRACE_CONT, 0);
                }
            }
            break;
        case PTRACE_EVENT_STOP: /* a new task's first stop, or a group stop */
            if (is_stop_signal(sig)) {
                if (ptrace(PTRACE_LISTEN, pid, 0, 0) < 0 && errno != ESRCH) out_failed = 1;
                continue;
            }
            if (pid != top) {
                struct task *c = task(pid, 1);
                if (!c->announced) {
                    c->parked = 1; /* resumed by its parent's fork event */
                    continue;
                }
            }
            break;
        case 0:
            if (sig == (SIGTRAP | 0x80)) { /* a syscall-exit stop: a write or dup finished */
                on_call_exit(pid);
                break;
            }
            inject = sig; /* a signal on its way: deliver it */
            break;
        default:
            break;
        }
        resume(pid, how, inject);
    }
    now(t, sizeof t);
    line("Z %s\n", t);
    int failed = fclose(out) != 0;
    if (!said && top_status >= 0) {
        if (last) *last = top_status;
        else if (top_ended(top_status) < 0) failed = 1;
    }
    return failed;
}

#ifndef EXECTRACE_NO_MAIN  /* the spawner, built with this file (exectrace.h), has its own */
/* The first process: it waits until the tracer (its child) reports how the top process
   ended, and exits the same way. The tracer stays with whatever the top left running (a
   server started in the background), recording until it ends. */
static int wait_for_report(int fd, pid_t tracer) {
    int st = 0;
    ssize_t n;
    do n = read(fd, &st, sizeof st);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof st) { /* the tracer failed, or died, before the top ended */
        while (waitpid(tracer, &st, 0) < 0 && errno == EINTR) {}
        if (WIFEXITED(st) && WEXITSTATUS(st)) return WEXITSTATUS(st);
        return 2;
    }
    if (WIFSIGNALED(st)) {
        signal(WTERMSIG(st), SIG_DFL);
        kill(getpid(), WTERMSIG(st));
        return 128 + WTERMSIG(st);
    }
    return WEXITSTATUS(st);
}

/* "PER,TOTAL": two byte counts. */
static int parse_limits(const char *s) {
    char *end;
    errno = 0;
    unsigned long long per = strtoull(s, &end, 10);
    if (errno || end == s || *end != ',') return -1;
    const char *rest = end + 1;
    unsigned long long total = strtoull(rest, &end, 10);
    if (errno || end == rest || *end || per > SIZE_MAX || total > SIZE_MAX) return -1;
    per_task_limit = (size_t)per;
    total_limit = (size_t)total;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: exectrace -o FILE [-w PER,TOTAL] -- PROGRAM [ARG...]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
            if (parse_limits(argv[++i]) < 0) return usage();
            capture = 1;
        } else if (!strcmp(argv[i], "--")) { i++; break; }
        else break;
    }
    if (!path || i >= argc) return usage();
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) { perror("exectrace: pipe"); return 2; }
    pid_t tracer = fork();
    if (tracer < 0) { perror("exectrace: fork"); return 2; }
    if (tracer > 0) {
        close(report[1]);
        return wait_for_report(report[0], tracer);
    }
    close(report[0]);
    out = fopen(path, "we");
    if (!out) { perror("exectrace: output"); return 2; }
    static char outbuf[1 << 16];
    setvbuf(out, outbuf, _IOFBF, sizeof outbuf);

    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) { perror("exectrace: pipe"); return 2; }
    pid_t top = fork();
    if (top < 0) { perror("exectrace: fork"); return 2; }
    if (top == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1) _exit(127); /* the tracer is gone: run nothing untraced */
        if (install_filter() < 0) { perror("exectrace: seccomp"); _exit(127); }
        execvp(argv[i], argv + i);
        fprintf(stderr, "exectrace: %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    close(go[0]);
    return trace(top, go[1], report[1]);
}
#endif
