package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// ui is the dashboard: one page of plain HTML, CSS and JavaScript written for
// it (no build step, nothing fetched from the internet), which polls the JSON
// API (api.go) and draws job graphs as SVG.
//
//go:embed ui
var ui embed.FS

// dashboard serves the dashboard's files; every other path is its page, which
// routes by the URL's fragment (#/jobs/3).
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	files, _ := fs.Sub(ui, "ui")
	switch r.URL.Path {
	case "/app.js", "/style.css":
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, files, r.URL.Path[1:])
	case "/", "/index.html":
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, files, "index.html")
	default:
		http.NotFound(w, r)
	}
}
