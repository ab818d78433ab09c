/* What the tracer's code (exectrace.c) gives the programs built with it: the exectrace
   program itself (its main, in exectrace.c) and the spawner (spawner.c), which runs each
   traced command under this same code. Two compilation units, one contract: this header.
   sandbox/native.py builds the spawner from spawner.c and exectrace.c, the latter with
   -DEXECTRACE_NO_MAIN. */
#ifndef PROCTOR_EXECTRACE_H
#define PROCTOR_EXECTRACE_H

#include <linux/audit.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* The architecture every seccomp filter here accepts (the tracer's and the spawner's). */
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u  /* set in the number of an x32 call: same arch, another ABI */
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "exectrace supports x86_64 and aarch64"
#endif

/* Where the trace goes (`file`, fully buffered by the caller), and, with `capture_writes`,
   what the traced processes write to fd 1 and 2: at most `per_task` bytes per process and
   `total` in all (exectrace -w). Called before each `trace`: it forgets the last tree. */
void trace_to(FILE *file, int capture_writes, size_t per_task, size_t total);

/* Where the tracees' /proc/PID/... are read: a directory fd of a /proc that shows them by
   the pids this process sees (the spawner's tracers: the box's, while their mounts are the
   trial's); without it, /proc. */
void trace_proc(int dir);

/* In the process that will exec the traced command, after it is told to go: the seccomp
   filter that stops it at each exec (and, when capturing, each write to fd 1 or 2).
   0, or -1 with errno. */
int install_filter(void);

/* The same with the variant named (1: with capture) rather than trace_to's. */
int install_filter_variant(int with_capture);

/* Both filters (with and without capture) assembled now, so that the processes this one
   forks only install theirs (the spawner, once per box: each tracer installs one). */
void prepare_filters(void);

/* The filter of that variant installed in the calling process itself, a tracer that never
   execs, so that each top it clones has it already (a clone shares its parent's filter: no
   filter compiled per command). Its own system calls pass the filter untouched only while it
   never execs and never writes to, or copies a descriptor onto or from, fd 1 or 2: its fds
   0-2 must be /dev/null already (trace_tree leaves them be from now on). 0, or -1 with
   errno. */
int filter_self(int with_capture);

/* The tracer's side, once `top` is forked and waits on `go` for the filter and its exec:
   follows it and everything it starts until all are gone (the top's end reported on
   `report`, a pipe, as a wait status), then the trace's Z line; `go`, `report` and the
   trace file are closed. Returns the tracer's exit code. */
int trace(pid_t top, int go, int report);

/* The same, but the top's end is said by calling `top_ended` (it returns 0, or -1 if it
   could not be said): at once if the top left something running, else after the Z line,
   or, with `last`, not said but put in *last (-1: none to give), for the caller to say with
   its own word that the tree is gone (the spawner's tracers, which then take the next
   command). `go` and the trace file are closed. */
int trace_tree(pid_t top, int go, int (*top_ended)(int status), int *last);

#endif
