"""The sentence splitter per script, on lines of the Universal Declaration of
Human Rights (`../shared/data/corpora/multilingual/udhr2`, public domain)."""
import pytest

from cmlm.data_pipelines.sentence_splitter import split_sentences

# (script, a real UDHR line, how many sentences it holds)
UDHR_LINES = [
    ('japanese', '何人も、奴隷にされ、又は苦役に服することはない。'
     '奴隷制度及び奴隷売買は、いかなる形においても禁止する。', 2),
    ('chinese', '人人生而自由,在尊严和权利上一律平等。'
     '他们赋有理性和良心,并应以兄弟关系的精神相对待。', 2),
    ('hindi', 'चूंकि इस प्रतिज्ञा को पूरी तरह से निभाने के लिए इन अधिकारों और '
     'आज़ादियों का स्वरूप ठीक-ठीक समझना सबसे अधिक ज़रूरी है । इसलिए, अब,', 2),
    ('arabic', 'لا يجوز إسترقاق أو إستعباد أي شخص. '
     'ويحظر الإسترقاق وتجارة الرقيق بكافة أوضاعهما.', 2),
    ('urdu', 'ہر شخص پر معاشرے کے حق ہیں۔ کیونکہ معاشرے میں رہ کر ہی اس کی '
     'شخصیت کی آزادانہ اور پوری نشوونما ممکن ہے۔', 2),
    ('greek', 'Κανείς δεν επιτρέπεται να ζει υπό καθεστώς δουλείας, ολικής ή '
     'μερικής. Η δουλεία και το δουλεμπόριο υπό οποιαδήποτε μορφή '
     'απαγορεύονται.', 2),
    ('armenian', 'Ծանոթացեք դրանց։ Աջակցեք այդ իրավունքներին, պաշտպանեք '
     'դրանք հանուն ձեզ և ձեր եղբայրակիցների։', 2),
    ('russian', 'Все люди рождаются свободными и равными в своем достоинстве и '
     'правах. Они наделены разумом и совестью и должны поступать в '
     'отношении друг друга в духе братства.', 2),
    ('georgian', 'არავინ არ უნდა იმყოფებოდეს მონობაში ან ძალმომრეობით '
     'მორჩილების მდგომარეობაში. ყველა სახის მონობა და მონათვაჭრობა '
     'აკრძალულია.', 2),
    ('amharic', 'ማንም፡ሰው፡ቢሆን፡በባርነት፡አይገዛም።፡ባርነትና፡የባሪያ፡ንግድም፡'
     'በማንኛውም፡ዓይነት፡ክልክል፡ነው።', 2),
]


@pytest.mark.parametrize('script,line,count', UDHR_LINES,
                         ids=[line[0] for line in UDHR_LINES])
def test_real_udhr_lines_split_at_their_script_sentence_ends(script, line,
                                                             count):
  del script
  sentences = split_sentences(line)
  assert len(sentences) == count
  assert ''.join(sentences).replace(' ', '') == line.replace(' ', '')
  # Each sentence but maybe the last ends with an end mark (or its
  # word separator), never in the middle of a word.
  for sentence in sentences[:-1]:
    assert sentence[-1] in '。.।۔։።፡'


def test_question_marks_of_greek_arabic_and_cjk():
  assert split_sentences('Τι είναι αυτό; Είναι ένα βιβλίο.') == [
      'Τι είναι αυτό;', 'Είναι ένα βιβλίο.']
  assert split_sentences('Τι είναι αυτό\u037e Είναι ένα βιβλίο.') == [
      'Τι είναι αυτό\u037e', 'Είναι ένα βιβλίο.']
  assert split_sentences('هل هذا كتاب؟ نعم هذا كتاب.') == [
      'هل هذا كتاب؟', 'نعم هذا كتاب.']
  assert split_sentences('「本当ですか？」と彼は言った。はい！') == [
      '「本当ですか？」', 'と彼は言った。', 'はい！']


def test_semicolon_and_colon_end_only_greek_and_armenian_sentences():
  # UDHR's Russian preamble: clauses joined by "; и", one sentence.
  russian = ('Принимая во внимание, что признание достоинства является '
             'основой свободы; и принимая во внимание, что пренебрежение '
             'привело к варварским актам.')
  assert split_sentences(russian) == [russian]
  assert split_sentences('Note: This is one. Here; There.') == [
      'Note: This is one.', 'Here; There.']
  assert split_sentences('Ծանոթացեք դրանց: Աջակցեք այդ իրավունքներին:') == [
      'Ծանոթացեք դրանց:', 'Աջակցեք այդ իրավունքներին:']


def test_lower_case_after_a_period_continues_cased_scripts_only():
  assert split_sentences('Он пришёл, т. е. вернулся. Потом ушёл.') == [
      'Он пришёл, т. е. вернулся.', 'Потом ушёл.']
  assert split_sentences('Books, pens etc. and more. Then Mr. Darcy left.') == [
      'Books, pens etc. and more.', 'Then Mr. Darcy left.']
  # Caseless scripts: any letter after the end mark starts a sentence.
  assert len(split_sentences('यह एक है। यह दो है।')) == 2
