package peer

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func signed(t *testing.T, key []byte, id Identity, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://node1:7817/api/submit?x=1", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	Sign(key, r, id, []byte(body))
	r.Body = NewBody([]byte(body))
	return r
}

func TestSignVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ann := Identity{UID: 1000, GID: 100, User: "ann", Group: "users"}

	id, body, err := Verify(key, signed(t, key, ann, `{"a":1}`))
	if err != nil || id != ann || string(body) != `{"a":1}` {
		t.Fatalf("good request: %+v %q %v", id, body, err)
	}
	if id, _, err := Verify(key, signed(t, key, Identity{Node: true}, "")); err != nil || !id.Node {
		t.Fatalf("node request: %+v %v", id, err)
	}

	tampered := signed(t, key, ann, `{"a":1}`)
	tampered.Body = NewBody([]byte(`{"a":2}`))
	if _, _, err := Verify(key, tampered); err == nil {
		t.Error("tampered body accepted")
	}
	root := signed(t, key, ann, `{}`)
	root.Header.Set(hdrUID, "0")
	if _, _, err := Verify(key, root); err == nil {
		t.Error("changed uid accepted")
	}
	if _, _, err := Verify([]byte("another key, also 32 bytes long!"), signed(t, key, ann, `{}`)); err == nil {
		t.Error("wrong key accepted")
	}
	old := signed(t, key, ann, `{}`)
	old.Header.Set(hdrTime, strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10))
	old.Header.Set(hdrSig, signature(key, old.Method, old.URL.RequestURI(), old.Header, []byte(`{}`)))
	if _, _, err := Verify(key, old); err == nil {
		t.Error("an hour-old request accepted")
	}
	bare, _ := http.NewRequest(http.MethodPost, "http://node1/api/submit", bytes.NewReader(nil))
	if _, _, err := Verify(key, bare); err == nil {
		t.Error("unsigned request accepted")
	}
}
