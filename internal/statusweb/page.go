package statusweb

import (
	"html/template"
	"net/http"
)

// pageTemplate is the status page; page.html holds the real one.
var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html><title>trainmaster</title><pre>{{.}}</pre>`))

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pageTemplate.Execute(w, s.status(r.Context())); err != nil {
		s.cfg.Log.WithError(err).Debug("status page: write")
	}
}
