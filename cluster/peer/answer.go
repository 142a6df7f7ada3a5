package peer

import (
	"encoding/json"
	"errors"
	"net/http"

	"hpc/cluster/api"
)

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
