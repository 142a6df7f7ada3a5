package peer

import (
	"encoding/gob"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"hpc/cluster/api"
)

// WriteList answers v, a long list, in gob (api.GobType) to a caller that
// accepts it (hpc's own commands: decoding 5,000 jobs takes a sixth of the
// time JSON does), and as JSON to any other.
func WriteList(w http.ResponseWriter, r *http.Request, v any) {
	if !strings.Contains(r.Header.Get("Accept"), api.GobType) {
		WriteJSON(w, v)
		return
	}
	w.Header().Set("Content-Type", api.GobType)
	_ = gob.NewEncoder(w).Encode(v)
}

// WriteJSON answers v as JSON.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// WriteErr answers err with the status code, as an api.Error.
func WriteErr(w http.ResponseWriter, code int, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		ae = &api.Error{Message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ae)
}

// UserErr answers err: 400 for an api.Error (the user's mistake), 500
// for anything else.
func UserErr(w http.ResponseWriter, err error) {
	var ae *api.Error
	if errors.As(err, &ae) {
		WriteErr(w, http.StatusBadRequest, err)
		return
	}
	WriteErr(w, http.StatusInternalServerError, err)
}
