-- Whether queued run `w` may be admitted now by an engine that runs the workflow names $5 (json
-- array): not asked to cancel, one of those names, and past its debounce window.
(w.cancel_requested_at IS NULL AND w.name IN (SELECT jsonb_array_elements_text($5::jsonb))
 AND (w.admit_after IS NULL OR w.admit_after <= {{now}}))
