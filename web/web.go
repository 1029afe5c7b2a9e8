// Package web holds the browser side that chatd serves from its own binary:
// the demo app (web/demo) and the JavaScript SDK's ES modules (web/sdk/src).
// They are plain files, embedded as they are: no build step, no CDN.
//
// The embed patterns name file types explicitly, so nothing else that lives
// in these folders (node_modules of the tests, editor files) can end up in
// the binary.
package web

import (
	"embed"
	"io/fs"
)

//go:embed demo/*.html demo/*.js demo/*.css sdk/src/*.js
var files embed.FS

// Demo is the demo app: index.html, its modules and its stylesheet at the
// root of the returned file system.
func Demo() fs.FS { return sub("demo") }

// SDK is the JavaScript SDK as browsers import it: its ES modules, with
// index.js at the root of the returned file system.
func SDK() fs.FS { return sub("sdk/src") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path, and dir is a constant.
		panic(err)
	}
	return f
}
