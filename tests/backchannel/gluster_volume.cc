// SPDX-License-Identifier: MIT
#include "backchannel/gluster_volume.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#ifndef RR_GLUSTER_SCRIPT
#define RR_GLUSTER_SCRIPT "tests/backchannel/gluster-volume.sh"
#endif
/* where Debian's nfs-ganesha-gluster puts the FSAL ganesha loads by name */
#ifndef RR_FSAL_GLUSTER_SO
#define RR_FSAL_GLUSTER_SO "/usr/lib/x86_64-linux-gnu/ganesha/libfsalgluster.so"
#endif

namespace rrplug
{

static bool in_path(const char *prog)
{
	std::string cmd = std::string("command -v ") + prog + " >/dev/null 2>&1";
	return system(cmd.c_str()) == 0;
}

bool GlusterVolume::available(std::string *why)
{
	if (!in_path("glusterd") || !in_path("gluster")) {
		*why = "glusterd / gluster not installed (glusterfs-server)";
		return false;
	}
	if (access(RR_FSAL_GLUSTER_SO, R_OK)) {
		*why = std::string("no ") + RR_FSAL_GLUSTER_SO + " (nfs-ganesha-gluster)";
		return false;
	}
	return true;
}

GlusterVolume::~GlusterVolume()
{
	down();
}

bool GlusterVolume::up(const std::string &name, std::string *err)
{
	char tmpl[] = "/tmp/rrgluster.XXXXXX";
	if (!mkdtemp(tmpl)) {
		*err = "mkdtemp failed";
		return false;
	}
	dir = tmpl;
	/* the script's stderr goes beside DIR, which "down" removes */
	std::string errf = dir + ".err";
	std::string cmd = std::string("'") + RR_GLUSTER_SCRIPT + "' up '" + dir + "' '" + name +
			  "' 2>'" + errf + "'";
	FILE *p = popen(cmd.c_str(), "r");
	char line[256] = "";
	bool got = p && fgets(line, sizeof(line), p);
	int st = p ? pclose(p) : -1;
	std::ifstream ef(errf);
	std::stringstream es;
	es << ef.rdbuf();
	unlink(errf.c_str());
	if (!got || st != 0) {
		*err =
		    "gluster-volume.sh up failed (status " + std::to_string(st) + "): " + es.str();
		down();
		return false;
	}
	host = line;
	while (!host.empty() && (host.back() == '\n' || host.back() == ' '))
		host.pop_back();
	volume = name;
	return true;
}

void GlusterVolume::down()
{
	if (dir.empty())
		return;
	std::string cmd = std::string("'") + RR_GLUSTER_SCRIPT + "' down '" + dir + "' >&2";
	if (system(cmd.c_str()) != 0)
		fprintf(stderr, "gluster-volume.sh down %s failed\n", dir.c_str());
	dir.clear();
	volume.clear();
}

} // namespace rrplug
