-- Version 4: a replacement names the version it replaced.
--
-- Only a replica serving exactly that version lacks the replacement and stops serving it; one
-- deployed with another definition (the new one, or newer code still) is not concerned.
ALTER TABLE registry_changes ADD COLUMN old_fingerprint text;
