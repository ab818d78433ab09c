/* exectrace: record every program a command tree executes, from outside it.

   exectrace -o FILE -- PROGRAM [ARG...]

   Runs PROGRAM under ptrace with a seccomp filter that stops a process only at execve and
   execveat; forks, clones and exits arrive as ptrace events. Nothing else stops anything:
   a program's threads run at full speed (strace --seccomp-bpf restarts every new thread
   with a stop at each of its system calls until that thread itself calls a traced one,
   which costs a many-threaded agent such as Codex or Claude Code several times its run
   time). Written to FILE, one event per line, pids as this process sees them:

     S PID             the top process
     F PARENT CHILD    a fork, vfork or clone (threads included)
     E PID ["ARG",...] an exec that succeeded, its argv as a JSON array
     X PID CODE        a process or thread exited
     K PID SIGNAL      ... was killed by a signal

   The trace is complete when it holds the top process's X or K line. exectrace exits as the
   top process did, once every traced process is gone; if exectrace dies, the kernel kills
   every traced process (PTRACE_O_EXITKILL). A process that escapes tracing (clone with
   CLONE_UNTRACED) keeps the filter and cannot exec at all: its execve fails with ENOSYS.
   Syscalls through a foreign ABI (int 0x80 on x86_64) are refused (EPERM), and so are the
   keyring calls (add_key, request_key, keyctl): keyrings belong to a uid, not a sandbox. */

#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#define ARG(r, i) ((i) == 0 ? (r).rdi : (i) == 1 ? (r).rsi : (r).rdx)
typedef struct user_regs_struct regs_t;
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define ARG(r, i) ((r).regs[i])
typedef struct user_pt_regs regs_t;
#else
#error "exectrace supports x86_64 and aarch64"
#endif

#define DATA_EXECVE 1
#define DATA_EXECVEAT 2
#define MAX_ARG 65536     /* bytes kept of one argument */
#define MAX_ARGS 4096     /* arguments kept of one argv */
#define MAX_LINE (1 << 21) /* bytes kept of one exec line */

static FILE *out;

/* What is known of a task: the argv read at its exec's seccomp stop, kept until the exec
   succeeds (PTRACE_EVENT_EXEC) or the task tries another; whether its parent's fork event
   has been written; whether it is held at its first stop until that is so (a child's first
   stop can arrive before its parent's fork event: its F line comes first all the same). */
struct task {
    pid_t pid;
    char *line;
    int announced, parked;
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
            free(t->line);
            free(t);
            return;
        }
}

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

struct buf {
    char *s;
    size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

/* One argument as a JSON string: bytes >= 0x80 as they are (the reader decodes UTF-8). */
static void put_string(struct buf *b, pid_t pid, uint64_t addr) {
    char chunk[512];
    size_t total = 0;
    put(b, "\"", 1);
    while (total < MAX_ARG) {
        size_t n = peek(pid, addr + total, chunk, sizeof chunk);
        if (n == 0) break;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)chunk[i];
            if (c == 0) goto end;
            if (c == '"' || c == '\\') {
                char esc[2] = {'\\', (char)c};
                put(b, esc, 2);
            } else if (c < 0x20) {
                char esc[8];
                snprintf(esc, sizeof esc, "\\u%04x", c);
                put(b, esc, 6);
            } else {
                put(b, (char *)&c, 1);
            }
        }
        total += n;
    }
end:
    put(b, "\"", 1);
}

static char *read_argv(pid_t pid, uint64_t argv) {
    struct buf b = {0};
    put(&b, "[", 1);
    for (int i = 0; i < MAX_ARGS && b.len < MAX_LINE; i++) {
        uint64_t ptr = 0;
        if (peek(pid, argv + 8 * (uint64_t)i, &ptr, 8) != 8 || ptr == 0) break;
        if (i) put(&b, ",", 1);
        put_string(&b, pid, ptr);
    }
    put(&b, "]", 1);
    return b.s;
}

static void on_exec_attempt(pid_t pid) {
    unsigned long which = 0;
    regs_t regs;
    struct iovec io = {&regs, sizeof regs};
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &which) < 0) return;
    if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &io) < 0) return;
    uint64_t argv = which == DATA_EXECVEAT ? ARG(regs, 2) : ARG(regs, 1);
    struct task *t = task(pid, 1);
    free(t->line);
    t->line = read_argv(pid, argv);
}

static void on_exec_done(pid_t pid) {
    unsigned long former = (unsigned long)pid; /* a thread that exec'd takes the leader's pid */
    ptrace(PTRACE_GETEVENTMSG, pid, 0, &former);
    struct task *t = task((pid_t)former, 0);
    fprintf(out, "E %d %s\n", pid, t && t->line ? t->line : "[]");
    if (t) {
        free(t->line);
        t->line = NULL;
    }
}

static int install_filter(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef X32_BIT
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        /* Keyrings are per user, not per sandbox: refused, as the spawner refuses them. */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_add_key, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_request_key, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_keyctl, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | DATA_EXECVE),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | DATA_EXECVEAT),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    /* Without privileges a filter needs no_new_privs; with them, leave setuid programs be. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) return 0;
    if (errno != EACCES) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

#define TRACE_OPTIONS (PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | \
                       PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL)

static int is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Follows `top` (seized with TRACE_OPTIONS) and everything it starts until every traced
   process is gone, writing the events to `out`; the top process's wait status. */
static int trace_loop(pid_t top) {
    int top_status = 0;
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, __WALL);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD: every traced process is gone */
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (WIFEXITED(st)) fprintf(out, "X %d %d\n", pid, WEXITSTATUS(st));
            else fprintf(out, "K %d %d\n", pid, WTERMSIG(st));
            if (pid == top) top_status = st;
            forget(pid);
            continue;
        }
        if (!WIFSTOPPED(st)) continue;
        int sig = WSTOPSIG(st), event = st >> 16, inject = 0;
        unsigned long child;
        switch (event) {
        case PTRACE_EVENT_SECCOMP:
            on_exec_attempt(pid);
            break;
        case PTRACE_EVENT_EXEC:
            on_exec_done(pid);
            break;
        case PTRACE_EVENT_FORK:
        case PTRACE_EVENT_VFORK:
        case PTRACE_EVENT_CLONE:
            if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &child) == 0) {
                fprintf(out, "F %d %lu\n", pid, child);
                struct task *t = task((pid_t)child, 1);
                t->announced = 1;
                if (t->parked) {
                    t->parked = 0;
                    ptrace(PTRACE_CONT, (pid_t)child, 0, 0);
                }
            }
            break;
        case PTRACE_EVENT_STOP: /* a new task's first stop, or a group stop */
            if (is_stop_signal(sig)) {
                ptrace(PTRACE_LISTEN, pid, 0, 0);
                continue;
            }
            if (pid != top) {
                struct task *t = task(pid, 1);
                if (!t->announced) {
                    t->parked = 1; /* resumed by its parent's fork event */
                    continue;
                }
            }
            break;
        default:
            inject = sig; /* a signal on its way: deliver it */
        }
        ptrace(PTRACE_CONT, pid, 0, (void *)(long)inject);
    }
    return top_status;
}

#ifndef EXECTRACE_NO_MAIN  /* spawner.c includes this file for its tracing code */
int main(int argc, char **argv) {
    const char *path = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--")) { i++; break; }
        else break;
    }
    if (!path || i >= argc) {
        fprintf(stderr, "usage: exectrace -o FILE -- PROGRAM [ARG...]\n");
        return 2;
    }
    out = fopen(path, "we");
    if (!out) { perror("exectrace: output"); return 2; }

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
    if (ptrace(PTRACE_SEIZE, top, 0, (void *)TRACE_OPTIONS) < 0) {
        perror("exectrace: ptrace");
        kill(top, SIGKILL);
        return 2;
    }
    fprintf(out, "S %d\n", top);
    if (write(go[1], "g", 1) != 1) { kill(top, SIGKILL); return 2; }
    close(go[1]);

    int top_status = trace_loop(top);
    fclose(out);
    if (WIFSIGNALED(top_status)) {
        signal(WTERMSIG(top_status), SIG_DFL);
        kill(getpid(), WTERMSIG(top_status));
        return 128 + WTERMSIG(top_status);
    }
    return WEXITSTATUS(top_status);
}
#endif
