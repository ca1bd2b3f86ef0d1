/* SPDX-License-Identifier: MIT */
/*
 * A small client for QEMU's qtest line protocol (system/qtest.c) and QMP:
 * starts qemu-system-x86_64 with -accel qtest, connected to two sockets
 * this process listens on, and sends commands one at a time. Asynchronous
 * "IRQ raise/lower N" lines (irq_intercept_in) are recorded as they arrive.
 */
#ifndef VNPU_QTEST_CLIENT_H
#define VNPU_QTEST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QT_MAX_IRQ 256

struct qt {
	pid_t pid;
	int fd;			/* qtest socket */
	int qmp_fd;		/* QMP socket */
	char dir[64];		/* temporary directory of the sockets */
	char *buf;		/* receive buffer */
	size_t len, cap;
	bool irq_level[QT_MAX_IRQ];
	unsigned irq_raises[QT_MAX_IRQ];
	char *qmp_buf;
	size_t qmp_len, qmp_cap;
};

/* The QEMU binary: $VNPU_QEMU, or NULL (tests then skip). */
const char *qt_qemu_binary(void);

/* Starts QEMU with `-machine q35 -accel qtest -nodefaults -display none`
 * and `args` (split on spaces). Aborts the test on failure. */
struct qt *qt_start(const char *args);
void qt_quit(struct qt *qt);
/* Is the QEMU process still running? */
bool qt_alive(struct qt *qt);

/* Sends one command line (without newline) and returns the text after
 * "OK" (empty string for a bare OK; valid until the next call), or NULL
 * when QEMU answered FAIL. */
const char *qt_cmd(struct qt *qt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

uint8_t qt_readb(struct qt *qt, uint64_t addr);
uint16_t qt_readw(struct qt *qt, uint64_t addr);
uint32_t qt_readl(struct qt *qt, uint64_t addr);
uint64_t qt_readq(struct qt *qt, uint64_t addr);
void qt_writeb(struct qt *qt, uint64_t addr, uint8_t v);
void qt_writew(struct qt *qt, uint64_t addr, uint16_t v);
void qt_writel(struct qt *qt, uint64_t addr, uint32_t v);
void qt_writeq(struct qt *qt, uint64_t addr, uint64_t v);
void qt_outl(struct qt *qt, uint16_t port, uint32_t v);
void qt_outw(struct qt *qt, uint16_t port, uint16_t v);
void qt_outb(struct qt *qt, uint16_t port, uint8_t v);
uint32_t qt_inl(struct qt *qt, uint16_t port);
void qt_memread(struct qt *qt, uint64_t addr, void *buf, size_t len);
void qt_memwrite(struct qt *qt, uint64_t addr, const void *buf, size_t len);
void qt_memset(struct qt *qt, uint64_t addr, uint8_t byte, size_t len);
/* Advances the virtual clock; returns the new clock. */
uint64_t qt_clock_step(struct qt *qt, uint64_t ns);
/* Intercepts the inputs of the QOM object at `path` (e.g. "ioapic"). */
void qt_irq_intercept_in(struct qt *qt, const char *path);
/* Processes IRQ lines that arrived since the last command. */
void qt_sync_irqs(struct qt *qt);

/* Sends a QMP command (JSON text) and returns the "return" reply line
 * (valid until the next call); NULL on error replies. */
const char *qt_qmp(struct qt *qt, const char *json);
/* system_reset through QMP; returns after the RESET event. */
void qt_system_reset(struct qt *qt);

#endif /* VNPU_QTEST_CLIENT_H */
