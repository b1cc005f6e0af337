package trainerport

import "time"

// DecoderIdle is decoderIdle, for the benchmarks of idle connections.
const DecoderIdle = decoderIdle

// SetDecoderIdle has the gob connections of sv give their decoders back
// after d without a request (0: whenever they wait); before Serve.
func SetDecoderIdle(sv *Server, d time.Duration) { sv.decoderIdle = d }
