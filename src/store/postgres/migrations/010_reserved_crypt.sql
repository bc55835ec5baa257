-- Reserved for the crypt branch (brief: migration numbers); a no-op placeholder so this
-- branch runs alone. Dropped when crypt's 010 lands.
SELECT 1;
