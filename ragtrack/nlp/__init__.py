"""Language helpers of the deterministic scorers: how texts are normalised, split and compared.

- `text`: SPEC §0's normalisation, bigrams and containment.
- `lexical`: statements and content tokens (English words, Chinese bigrams).
- `facts`: the checkable facts of a text (numbers, dates, articles, rates …), normalised.
- `quantities`: amounts and units by value (`pint`, Chinese unit words).
- `contradiction`: polarity, conditions, scope, quantities and changed words of a statement against its
  evidence.
- `thesaurus`: synonyms from WordNet (English) and Cilin (Chinese), for the words a near-copy changes.
- `entities`: named entities and terms (English patterns, jieba for Chinese), a question's focus.

May import: `ragtrack.core`.
"""
