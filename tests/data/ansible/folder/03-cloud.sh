#!/bin/sh
[ "$1" = "--list" ] && echo '{"cloud": {"hosts": ["vm-1", "vm-2"]}, "web": {"children": ["cloud"]}, "_meta": {"hostvars": {"vm-1": {"ansible_host": "172.16.9.1"}, "vm-2": {"ansible_host": "172.16.9.2"}}}}'
