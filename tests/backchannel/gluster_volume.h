// SPDX-License-Identifier: MIT
/*
 * gluster_volume.h - a throw-away single-brick GlusterFS volume for the
 * delegation tests, made and removed by tests/backchannel/gluster-volume.sh
 * (glusterd in the foreground, all its state in a temp dir of its own).
 */
#pragma once

#include <string>

namespace rrplug
{

class GlusterVolume
{
      public:
	/* false (with @why) when glusterd or ganesha's FSAL GLUSTER is missing */
	static bool available(std::string *why);

	GlusterVolume() = default;
	~GlusterVolume();
	GlusterVolume(const GlusterVolume &) = delete;
	GlusterVolume &operator=(const GlusterVolume &) = delete;

	/* create and start volume @name; false with the script's words in @err */
	bool up(const std::string &name, std::string *err);
	/* stop the brick and glusterd, remove every file (also on destruction) */
	void down();

	std::string host;   /* the brick's address (glusterd refuses loopback) */
	std::string volume; /* empty until up() succeeded */
	std::string dir;    /* glusterd's state, the brick, the logs */
};

} // namespace rrplug
