// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Who may connect to the ports' socket, said once at start-up: a QEMU
 * that cannot connect says so only in its domain's log, so the switch's
 * log says too that libvirt's user lacks the socket's group.
 */
#include "switch.h"

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

/* The user Debian's libvirt runs QEMU as. */
#define LIBVIRT_QEMU_USER "libvirt-qemu"

static bool user_in_group(const struct passwd *pw, const struct group *gr)
{
	if (pw->pw_gid == gr->gr_gid)
		return true;
	for (char **m = gr->gr_mem; m && *m; m++)
		if (!strcmp(*m, pw->pw_name))
			return true;
	return false;
}

void sock_log_access(const char *path)
{
	const struct group *gr;
	const struct passwd *pw;
	struct stat st;

	if (stat(path, &st) < 0)
		return;
	/* root's group: run by hand, only root's QEMU was meant to connect */
	if (st.st_gid == 0)
		return;
	gr = getgrgid(st.st_gid);
	if (!gr) {
		vs_log(VS_LOG_WARN, "%s: group %u has no name", path, (unsigned)st.st_gid);
		return;
	}
	vs_log(VS_LOG_INFO, "%s: mode %04o, group %s: QEMU connects as root or as a member",
	       path, (unsigned)(st.st_mode & 07777), gr->gr_name);
	pw = getpwnam(LIBVIRT_QEMU_USER);
	if (pw && !user_in_group(pw, gr))
		vs_log(VS_LOG_WARN,
		       "user %s (libvirt's QEMU) is not in group %s: its guests cannot connect (adduser %s %s)",
		       LIBVIRT_QEMU_USER, gr->gr_name, LIBVIRT_QEMU_USER, gr->gr_name);
}
