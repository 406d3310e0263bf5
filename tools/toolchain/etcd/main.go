// Command etcd is etcd's server, built from the pinned go.etcd.io/etcd/server/v3
// module. etcd's own go.mod carries replace directives, so it cannot be
// `go install`ed; this three-line main in a module of its own can.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
