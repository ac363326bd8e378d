"""What the reference agents say verbatim: repair and hand-off lines, and the identity challenges."""

REPAIR = "Sorry, I didn't catch that. Could you repeat that?"
SILENCE = "Sorry, I can't hear anything. Could you repeat that?"
NOISE = "Sorry, there is some noise on the line and I didn't catch that. Could you repeat that?"
HANDOFF = "I'm transferring you to a human agent now."
HOLD = "Please hold while I find someone for you."
REFUSAL = "I'm unable to transfer you to a human agent right now, but I can help you myself."
ANYTHING_ELSE = "Is there anything else I can help you with?"
CHALLENGES: dict[str, str] = {  # worded twice where eSpeak + Whisper garble one form ("date of birth")
    "holder_name": "What is the full name on the account?",
    "date_of_birth": "What is your birthday, your date of birth?",
    "postcode": "What is the postal code, the zip code, on the account?",
    "email": "What is the email address on the account?",
}
GENERIC_CHALLENGE = "For security, could you confirm your identity once more?"
