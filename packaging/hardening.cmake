# Debian's hardening flags (dpkg-buildflags, with bindnow) for every C object
# and every link, so the package's binaries carry stack protector, fortified
# libc calls, RELRO and immediate binding (lintian's hardening checks), and
# the tests run the code as shipped. Included by the top CMakeLists.txt
# before any target. Not with sanitizers or fuzzers (their runtimes replace
# the fortified calls). _FORTIFY_SOURCE needs the optimizer: not in Debug.
# C only: C++ test code is not shipped, and fortify's warn_unused_result
# would hold gtest code to rules it was not written for.
option(RPCRDMA_HARDENING "Debian hardening flags (dpkg-buildflags)" ON)
if(NOT RPCRDMA_HARDENING OR RPCRDMA_SANITIZE OR RPCRDMA_FUZZ)
	return()
endif()

# Where dpkg-buildflags is missing (not Debian), what it gives on Debian 12.
set(_cflags -fstack-protector-strong -Wformat -Werror=format-security)
set(_cppflags -D_FORTIFY_SOURCE=2)
set(_ldflags -Wl,-z,relro -Wl,-z,now)
find_program(DPKG_BUILDFLAGS dpkg-buildflags)
if(DPKG_BUILDFLAGS)
	foreach(_v CFLAGS CPPFLAGS LDFLAGS)
		execute_process(COMMAND ${CMAKE_COMMAND} -E env
					DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow
					${DPKG_BUILDFLAGS} --get ${_v}
				OUTPUT_VARIABLE _out OUTPUT_STRIP_TRAILING_WHITESPACE
				RESULT_VARIABLE _rc)
		if(NOT _rc EQUAL 0)
			continue()
		endif()
		separate_arguments(_out UNIX_COMMAND "${_out}")
		# The hardening part only: optimisation and debug info are the
		# build type's, and -ffile-prefix-map names dpkg-buildflags' cwd.
		list(FILTER _out EXCLUDE REGEX "^-(O.*|g.*|ffile-prefix-map=.*|fdebug-prefix-map=.*)$")
		string(TOLOWER ${_v} _l)
		set(_${_l} ${_out})
	endforeach()
endif()
message(STATUS "hardening: C ${_cflags}; CPP ${_cppflags}; LD ${_ldflags}")

foreach(_f ${_cflags})
	add_compile_options($<$<COMPILE_LANGUAGE:C>:${_f}>)
endforeach()
foreach(_f ${_cppflags})
	if(_f MATCHES "^-D_FORTIFY_SOURCE")
		add_compile_options("$<$<AND:$<COMPILE_LANGUAGE:C>,$<NOT:$<CONFIG:Debug>>>:${_f}>")
	else()
		add_compile_options($<$<COMPILE_LANGUAGE:C>:${_f}>)
	endif()
endforeach()
add_link_options(${_ldflags})
