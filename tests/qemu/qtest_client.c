// SPDX-License-Identifier: MIT
/* qtest line protocol and QMP client; see qtest_client.h. */
#include "qtest_client.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QT_TIMEOUT_MS 60000

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "qtest: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	/* Check reports the test as failed (early exit). */
	abort();
}

const char *qt_qemu_binary(void)
{
	const char *q = getenv("VNPU_QEMU");

	return q && *q ? q : NULL;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 1))
		die("bind/listen %s: %s", path, strerror(errno));
	return fd;
}

static int accept_from(struct qt *qt, int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	for (int waited = 0; waited < QT_TIMEOUT_MS; waited += 100) {
		if (poll(&p, 1, 100) == 1) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				die("accept: %s", strerror(errno));
			return fd;
		}
		if (!qt_alive(qt))
			die("QEMU exited before connecting");
	}
	die("QEMU did not connect");
}

struct qt *qt_start(const char *args)
{
	const char *qemu = qt_qemu_binary();
	struct qt *qt = calloc(1, sizeof(*qt));
	char qtest_path[96], qmp_path[96], *argcopy, *tok, *save;
	char *argv[128];
	int argc = 0, lq, lm;

	if (!qemu || !qt)
		die("no QEMU binary (VNPU_QEMU) or no memory");
	snprintf(qt->dir, sizeof(qt->dir), "/tmp/vnpu-qtest-XXXXXX");
	if (!mkdtemp(qt->dir))
		die("mkdtemp: %s", strerror(errno));
	snprintf(qtest_path, sizeof(qtest_path), "%s/qtest.sock", qt->dir);
	snprintf(qmp_path, sizeof(qmp_path), "%s/qmp.sock", qt->dir);
	lq = listen_unix(qtest_path);
	lm = listen_unix(qmp_path);

	static char qtest_arg[128], qmp_arg[160];
	snprintf(qtest_arg, sizeof(qtest_arg), "unix:%s", qtest_path);
	snprintf(qmp_arg, sizeof(qmp_arg), "socket,path=%s,id=vnpuqmp",
		 qmp_path);
	/* $VNPU_QTEST_LOG names a file for QEMU's log of the protocol. */
	const char *log = getenv("VNPU_QTEST_LOG");
	const char *fixed[] = {
		qemu, "-machine", "q35", "-accel", "qtest", "-nodefaults",
		"-display", "none", "-qtest", qtest_arg, "-chardev", qmp_arg,
		"-mon", "chardev=vnpuqmp,mode=control",
		"-qtest-log", log && *log ? log : "/dev/null",
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[argc++] = (char *)fixed[i];
	argcopy = strdup(args ? args : "");
	for (tok = strtok_r(argcopy, " ", &save); tok && argc < 126;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;

	qt->pid = fork();
	if (qt->pid < 0)
		die("fork: %s", strerror(errno));
	if (qt->pid == 0) {
		/* QEMU dies with the test, even when the test crashes. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(qemu, argv);
		fprintf(stderr, "exec %s: %s\n", qemu, strerror(errno));
		_exit(127);
	}
	free(argcopy);
	qt->fd = accept_from(qt, lq);
	qt->qmp_fd = accept_from(qt, lm);
	close(lq);
	close(lm);
	unlink(qtest_path);
	unlink(qmp_path);
	rmdir(qt->dir);
	/* QMP greeting, then capabilities negotiation. */
	if (!qt_qmp(qt, NULL) ||
	    !qt_qmp(qt, "{\"execute\": \"qmp_capabilities\"}"))
		die("QMP handshake failed");
	return qt;
}

bool qt_alive(struct qt *qt)
{
	int st;

	if (qt->pid <= 0)
		return false;
	return waitpid(qt->pid, &st, WNOHANG) == 0;
}

void qt_quit(struct qt *qt)
{
	if (!qt)
		return;
	if (qt->pid > 0) {
		kill(qt->pid, SIGTERM);
		waitpid(qt->pid, NULL, 0);
	}
	close(qt->fd);
	close(qt->qmp_fd);
	free(qt->buf);
	free(qt->qmp_buf);
	free(qt);
}

/* Reads one line from fd into a growing buffer; returns it NUL-terminated
 * (the newline removed). */
static char *read_line(struct qt *qt, int fd, char **bufp, size_t *lenp,
		       size_t *capp)
{
	for (;;) {
		char *nl = *lenp ? memchr(*bufp, '\n', *lenp) : NULL;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t linelen = (size_t)(nl - *bufp);
			char *line = malloc(linelen + 1);

			if (!line)
				die("out of memory");
			memcpy(line, *bufp, linelen);
			line[linelen] = 0;
			memmove(*bufp, nl + 1, *lenp - linelen - 1);
			*lenp -= linelen + 1;
			return line;
		}
		if (*capp - *lenp < 65536) {
			*capp = *capp * 2 + 65536;
			*bufp = realloc(*bufp, *capp);
			if (!*bufp)
				die("out of memory");
		}
		if (poll(&p, 1, QT_TIMEOUT_MS) != 1)
			die("no reply from QEMU within %d ms", QT_TIMEOUT_MS);
		n = read(fd, *bufp + *lenp, *capp - *lenp);
		if (n <= 0)
			die("QEMU closed the connection (crashed?)");
		*lenp += (size_t)n;
	}
	(void)qt;
}

static bool handle_irq_line(struct qt *qt, const char *line)
{
	unsigned n;

	if (sscanf(line, "IRQ raise %u", &n) == 1) {
		if (n < QT_MAX_IRQ) {
			qt->irq_level[n] = true;
			qt->irq_raises[n]++;
		}
		return true;
	}
	if (sscanf(line, "IRQ lower %u", &n) == 1) {
		if (n < QT_MAX_IRQ)
			qt->irq_level[n] = false;
		return true;
	}
	return false;
}

static void send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			die("write to QEMU: %s", strerror(errno));
		}
		s += n;
		len -= (size_t)n;
	}
}

static char *last_reply;

static const char *qt_send_line(struct qt *qt, char *line, size_t len)
{
	send_all(qt->fd, line, len);
	for (;;) {
		char *r = read_line(qt, qt->fd, &qt->buf, &qt->len, &qt->cap);

		if (handle_irq_line(qt, r)) {
			free(r);
			continue;
		}
		free(last_reply);
		last_reply = r;
		if (!strncmp(r, "OK", 2))
			return r[2] == ' ' ? r + 3 : r + 2;
		if (!strncmp(r, "FAIL", 4))
			return NULL;
		die("unexpected qtest reply '%.80s'", r);
	}
}

const char *qt_cmd(struct qt *qt, const char *fmt, ...)
{
	va_list ap;
	char *line;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("out of memory");
	line = realloc(line, (size_t)n + 2);
	line[n] = '\n';
	line[n + 1] = 0;
	const char *r = qt_send_line(qt, line, (size_t)n + 1);
	free(line);
	return r;
}

static uint64_t cmd_value(struct qt *qt, const char *what, uint64_t addr)
{
	const char *r = qt_cmd(qt, "%s 0x%llx", what, (unsigned long long)addr);

	if (!r)
		die("%s 0x%llx failed", what, (unsigned long long)addr);
	return strtoull(r, NULL, 0);
}

static void cmd_ok(struct qt *qt, const char *what, uint64_t addr,
		   uint64_t v)
{
	if (!qt_cmd(qt, "%s 0x%llx 0x%llx", what, (unsigned long long)addr,
		    (unsigned long long)v))
		die("%s 0x%llx failed", what, (unsigned long long)addr);
}

uint8_t qt_readb(struct qt *qt, uint64_t a) { return cmd_value(qt, "readb", a); }
uint16_t qt_readw(struct qt *qt, uint64_t a) { return cmd_value(qt, "readw", a); }
uint32_t qt_readl(struct qt *qt, uint64_t a) { return cmd_value(qt, "readl", a); }
uint64_t qt_readq(struct qt *qt, uint64_t a) { return cmd_value(qt, "readq", a); }
uint32_t qt_inl(struct qt *qt, uint16_t p) { return cmd_value(qt, "inl", p); }
void qt_writeb(struct qt *qt, uint64_t a, uint8_t v) { cmd_ok(qt, "writeb", a, v); }
void qt_writew(struct qt *qt, uint64_t a, uint16_t v) { cmd_ok(qt, "writew", a, v); }
void qt_writel(struct qt *qt, uint64_t a, uint32_t v) { cmd_ok(qt, "writel", a, v); }
void qt_writeq(struct qt *qt, uint64_t a, uint64_t v) { cmd_ok(qt, "writeq", a, v); }
void qt_outl(struct qt *qt, uint16_t p, uint32_t v) { cmd_ok(qt, "outl", p, v); }
void qt_outw(struct qt *qt, uint16_t p, uint16_t v) { cmd_ok(qt, "outw", p, v); }
void qt_outb(struct qt *qt, uint16_t p, uint8_t v) { cmd_ok(qt, "outb", p, v); }

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(char c)
{
	const char *p = c ? strchr(b64chars, c) : NULL;

	return p ? (int)(p - b64chars) : -1;
}

void qt_memwrite(struct qt *qt, uint64_t addr, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	size_t cap = len / 3 * 4 + 128, o;
	char *line = malloc(cap);

	if (!line)
		die("out of memory");
	if (!len)
		goto out;
	o = (size_t)snprintf(line, cap, "b64write 0x%llx 0x%zx ",
			     (unsigned long long)addr, len);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t rem = len - i;

		if (rem > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (rem > 2)
			v |= in[i + 2];
		line[o++] = b64chars[(v >> 18) & 63];
		line[o++] = b64chars[(v >> 12) & 63];
		line[o++] = rem > 1 ? b64chars[(v >> 6) & 63] : '=';
		line[o++] = rem > 2 ? b64chars[v & 63] : '=';
	}
	line[o++] = '\n';
	if (!qt_send_line(qt, line, o))
		die("b64write failed");
out:
	free(line);
}

void qt_memread(struct qt *qt, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	const char *r;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (!len)
		return;
	r = qt_cmd(qt, "b64read 0x%llx 0x%zx", (unsigned long long)addr, len);
	if (!r)
		die("b64read failed");
	for (; *r && o < len; r++) {
		int v = b64val(*r);

		if (v < 0)
			continue;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (o != len)
		die("b64read returned %zu of %zu bytes", o, len);
}

void qt_memset(struct qt *qt, uint64_t addr, uint8_t byte, size_t len)
{
	if (len && !qt_cmd(qt, "memset 0x%llx 0x%zx 0x%02x",
			   (unsigned long long)addr, len, byte))
		die("memset failed");
}

uint64_t qt_clock_step(struct qt *qt, uint64_t ns)
{
	const char *r = qt_cmd(qt, "clock_step %llu", (unsigned long long)ns);

	if (!r)
		die("clock_step failed");
	return strtoull(r, NULL, 0);
}

void qt_irq_intercept_in(struct qt *qt, const char *path)
{
	if (!qt_cmd(qt, "irq_intercept_in %s", path))
		die("irq_intercept_in %s failed", path);
}

void qt_sync_irqs(struct qt *qt)
{
	/* A harmless command: IRQ lines sent before its reply are read. */
	qt_cmd(qt, "clock_step 0");
}

static char *last_qmp;

const char *qt_qmp(struct qt *qt, const char *json)
{
	if (json) {
		send_all(qt->qmp_fd, json, strlen(json));
		send_all(qt->qmp_fd, "\n", 1);
	}
	for (;;) {
		char *r = read_line(qt, qt->qmp_fd, &qt->qmp_buf, &qt->qmp_len,
				    &qt->qmp_cap);

		free(last_qmp);
		last_qmp = r;
		if (!json && strstr(r, "\"QMP\""))
			return r;
		if (strstr(r, "\"return\""))
			return r;
		if (strstr(r, "\"error\""))
			return NULL;
		/* events are skipped */
	}
}

void qt_system_reset(struct qt *qt)
{
	bool returned = false, event = false;

	send_all(qt->qmp_fd, "{\"execute\": \"system_reset\"}\n", 28);
	while (!returned || !event) {
		char *r = read_line(qt, qt->qmp_fd, &qt->qmp_buf, &qt->qmp_len,
				    &qt->qmp_cap);

		if (strstr(r, "\"return\""))
			returned = true;
		else if (strstr(r, "\"error\""))
			die("system_reset: %s", r);
		else if (strstr(r, "\"RESET\""))
			event = true;
		free(r);
	}
	/* The reset runs in the main loop; a qtest round trip follows it. */
	qt_sync_irqs(qt);
}
