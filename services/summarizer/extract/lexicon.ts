// Everyday English: words any chat uses whatever it is about. A word outside this list is rarer
// and says more about what a sentence is about (a place, a product, an event, a food), so the
// extractive summarizer weighs it as a term. Hand-kept, lower case, no model and no download;
// contractions also as chat types them without an apostrophe (dont, im, thats).
const WORDS = `
a about above across actually add added after afternoon again against ago agree ah all almost
alone along already also although always am among an and another answer any anybody anyone
anything anyway anywhere are area aren't around as ask asked asking at away awesome back bad
be became because become been before began begin behind being believe below best better between
big bit both bring brought but buy by call called came can can't cannot car care case cause
certain certainly change check checked come coming could couldn't course cool day days did didn't
different do does doesn't doing don't done down during each early easy either else end enough
even evening ever every everybody everyone everything exactly example far feel feeling felt few
find fine first five for found four free friend friends from full fun gave get gets getting give
given glad go goes going gone good got great guess guy guys had hadn't half happen happened happy
hard has hasn't have haven't having he he'd he'll he's hear heard hello help her here here's hers
herself hey hi him himself his hold home honestly hope hour hours how however huge i i'd i'll
i'm i've idea if important in instead into is isn't it it'd it'll it's its itself just keep
kind knew know known last late later least leave left less let let's life like liked likely
little long look looked looking lot lots love made make makes making man many maybe me mean
means meant might mind mine minute minutes moment more morning most mostly much must my myself
name need needed needs never new next nice night no nobody none nor not nothing now of off oh
ok okay old on once one ones only onto open or other others our ours ourselves out over own
part people perhaps person place plan plans play please point possible pretty probably problem
put quite rather read ready real really reason right said same saw say saying says see seem
seemed seems seen send sent set several shall she she'd she'll she's should shouldn't show side
since small so some somebody someone something sometimes somewhere soon sorry sort sound sounds
start started still stop stuff such suppose sure take taken talk talked tell than thank thanks
that that's the their theirs them themselves then there there's these they they'd they'll
they're they've thing things think thinking third this those though thought three through time
times to today together told tomorrow tonight too took totally toward true try trying turn
two under until up upon us use used using very wait want wanted wants was wasn't way we we'd
we'll we're we've week weeks well went were weren't what what's whatever when where whether
which while who who's whole whom whose why will wish with within without won't wonder word
work worked working works world would wouldn't wow yeah year years yes yet you you'd you'll
you're you've young your yours yourself yourselves yep nope hmm haha lol thx btw fyi imo tbh
able across ahead anyway anymore around aside asap basically began bring busy came chance
clear close coming completely couple current currently definitely due else entire especially
everywhere exact fair fast finally fine front further gets giving gotten hand hands happens
hardly heads high honest hoping hopefully itself keeps kinda kept kind likely literally
lately lots main maybe mentioned middle mostly near nearly needs normal nothing okay often
otherwise past pick picked quick quickly rather recently remember right round saying second
seriously short simply slightly somehow soon sounds speaking still sure taking talking thanks
themselves thinking thought tried truly trying usually wanna whatever whenever wherever
wondering worth yesterday bit bits anyone's lot else's
dont doesnt didnt cant couldnt wouldnt shouldnt wont isnt arent wasnt werent havent hasnt
im ive ill id youre youve youll youd hes shes thats theres whats hows wheres theyre theyve
itll itd lets gonna gotta kinda sorta dunno idk ya yea yah nah ohh ahh umm anyways etc
`;

export const COMMON_WORDS: ReadonlySet<string> = new Set(WORDS.split(/\s+/).filter(Boolean));
