package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// Static is the page's files: index.html, app.js, style.css, favicon.svg.
func Static() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// csp allows the page nothing but its own files and its own server:
// no inline script, no other origin.
const csp = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Handler serves the page's files (mount it under a prefix with
// http.StripPrefix) and, for "" or "/", index.html. Browsers revalidate
// every time (no-cache), so a node running a newer binary is never shown
// an older page.
func Handler() http.Handler {
	fsrv := http.FileServerFS(Static())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path == "" || r.URL.Path == "/" {
			http.ServeFileFS(w, r, Static(), "index.html")
			return
		}
		fsrv.ServeHTTP(w, r)
	})
}
