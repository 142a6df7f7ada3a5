package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestOffline: the page's files refer to nothing outside the node (no CDN,
// no font service), and every file index.html names is embedded.
func TestOffline(t *testing.T) {
	err := fs.WalkDir(Static(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Static(), path)
		if err != nil {
			return err
		}
		// The SVG's namespace is a name, not a fetch.
		text := strings.ReplaceAll(string(b), `xmlns="http://www.w3.org/2000/svg"`, "")
		if m := regexp.MustCompile(`(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(text); m != "" {
			t.Errorf("%s refers to %s", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	index, _ := fs.ReadFile(Static(), "index.html")
	for _, m := range regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`).FindAllStringSubmatch(string(index), -1) {
		if _, err := fs.Stat(Static(), m[1]); err != nil {
			t.Errorf("index.html names /ui/%s, which is not embedded", m[1])
		}
	}
}

func TestHandler(t *testing.T) {
	for path, want := range map[string]string{"/": "text/html", "/app.js": "javascript", "/style.css": "text/css"} {
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), want) {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
	}
}
