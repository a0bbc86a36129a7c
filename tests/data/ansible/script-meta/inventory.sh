#!/bin/sh
# A dynamic inventory that answers --list with every host's vars under _meta (so Ansible never
# asks --host).
case "$1" in
--list)
    cat <<'JSON'
{
  "group": {
    "hosts": ["192.168.56.71", "192.168.56.72"],
    "vars": {
      "ansible_user": "vagrant",
      "ansible_ssh_private_key_file": "~/.vagrant.d/insecure_private_key",
      "ansible_python_interpreter": "/usr/bin/python3",
      "example_variable": "value"
    }
  },
  "databases": {"hosts": ["db.internal"], "children": ["replicas"]},
  "replicas": ["db-replica.internal"],
  "_meta": {
    "hostvars": {
      "192.168.56.71": {"host_specific_var": "foo"},
      "192.168.56.72": {"host_specific_var": "bar", "ansible_port": 2222},
      "db-replica.internal": {"ansible_host": "10.1.0.5"}
    }
  }
}
JSON
    ;;
*)
    echo '{}'
    ;;
esac
