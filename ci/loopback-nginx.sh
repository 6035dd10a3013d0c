# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the GPU machine's benchmark scripts: start_loopback_nginx <work dir> <port> starts
# nginx (8 workers, sendfile, no access log) serving <work dir>/www on 127.0.0.1:<port>, with
# Debian's package from .device-run where the machine has no /usr/sbin/nginx, and sets
# nginx_pid. <root> is the repository root, in $root.
start_loopback_nginx() {
  local work=$1 port=$2
  local nginx_bin=/usr/sbin/nginx
  if [[ ! -x $nginx_bin ]]; then
    dpkg -x "$root"/.device-run/nginx_*.deb "$work/ngx"
    nginx_bin=$work/ngx/usr/sbin/nginx
  fi
  mkdir -p "$work/www" "$work/tmp"
  cat >"$work/nginx.conf" <<NGINX
$([[ $(id -u) == 0 ]] && echo "user root;")
daemon off;
worker_processes 8;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  server { listen 127.0.0.1:$port$([[ ${NGINX_REUSEPORT:-0} == 1 ]] && echo " reuseport"); root $work/www; }
}
NGINX
  "$nginx_bin" -c "$work/nginx.conf" -p "$work" &
  nginx_pid=$!
}
