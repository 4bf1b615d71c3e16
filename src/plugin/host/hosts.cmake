# The host adapters (rrp_host.h), by the libntirpc each ganesha release
# ships with: _host_by_ntirpc_<ntirpc version> is the host/ganesha-<X.Y>
# folder to build (4.3/4.3, 5.9/5.8, 6.5/6.3).
set(_host_by_ntirpc_4.3 4.3)
set(_host_by_ntirpc_5.8 5.9)
set(_host_by_ntirpc_6.3 6.5)
