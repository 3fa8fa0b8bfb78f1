package image

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// writeSideKey marks the context of a push and of the HEADs on its target that
// decide what to write.
type writeSideKey struct{}

// forWrite returns ctx marked as the write side of a mirror or a build: its HEADs
// may be taken as absent (absentOnServerError).
func forWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, writeSideKey{}, true)
}

// absentOnServerError turns resp, the last answer to req after every retry, into a
// 404 when req is a HEAD on the write side that the registry kept answering with 500;
// any other resp is returned as it is. 502, 503 and 504 say the registry is not
// there, not that its record is broken, so they stay errors. A HEAD only asks whether the
// target already has a blob or a manifest, and writing it again is harmless: both
// are addressed by content. The write also repairs a registry whose own record of
// it is broken: distribution, SIGKILLed while it rewrote a link file, answers every
// HEAD of that blob or tag with 500 ("invalid checksum digest format") until it is
// written again (docs/reliability.md). A registry that is down fails the write too,
// and that error is reported.
func absentOnServerError(req *http.Request, resp *http.Response, log io.Writer) *http.Response {
	if resp == nil || resp.StatusCode != http.StatusInternalServerError || req.Method != http.MethodHead || req.Context().Value(writeSideKey{}) == nil {
		return resp
	}
	if !strings.Contains(req.URL.Path, "/blobs/") && !strings.Contains(req.URL.Path, "/manifests/") {
		return resp
	}
	if log != nil {
		fmt.Fprintf(log, "registry %s kept answering HEAD %s with HTTP %s: taken as absent, so it is written again\n", req.URL.Host, req.URL.Path, resp.Status)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return &http.Response{
		Status: "404 Not Found", StatusCode: http.StatusNotFound,
		Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		Header: http.Header{}, Body: http.NoBody, Request: req,
	}
}
