-- Reserved for the erase branch (brief: migration numbers); a no-op placeholder so this
-- branch runs alone. Dropped when erase's 011 lands.
SELECT 1;
