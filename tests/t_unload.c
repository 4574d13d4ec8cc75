// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading: refused while a file is open (the file pins the module),
 * clean once it is closed. Runs last in the VM: the module is gone after.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tap.h"

static long unload(void)
{
	return syscall(SYS_delete_module, "fastremap", O_NONBLOCK);
}

int main(void)
{
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	long r;

	if (!tap_ok(fd >= 0, "device opens"))
		return tap_done();
	r = unload();
	tap_ok(r == -1 && (errno == EWOULDBLOCK || errno == EBUSY),
	       "unload refused while a file is open (%s)",
	       r ? strerrorname_np(errno) : "succeeded");
	tap_ok(access("/sys/module/fastremap", F_OK) == 0,
	       "module still loaded after the refused unload");
	close(fd);
	r = unload();
	tap_ok(r == 0, "unload succeeds once the file is closed (%s)",
	       r ? strerrorname_np(errno) : "0");
	tap_ok(access("/sys/module/fastremap", F_OK) != 0 &&
	       access(FASTREMAP_DEVICE, F_OK) != 0,
	       "module and device node are gone");
	return tap_done();
}
