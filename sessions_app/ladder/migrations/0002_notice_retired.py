"""Retired notices are kept (when, why, which loop's end retired them) instead of deleted."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ladder', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='retrynotice',
            name='retired_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='retrynotice',
            name='retired_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='ladder.retryloop'),
        ),
        migrations.AddField(
            model_name='retrynotice',
            name='retired_reason',
            field=models.CharField(blank=True, choices=[('recovered', 'Provider recovered (the retried call answered)'), ('succeeded', 'Turn succeeded'), ('exhausted', 'Retries used up'), ('failed', 'Turn failed'), ('cancelled', 'Cancelled or stopped by a viewer'), ('replaced', 'Replaced (new prompt, start fresh or target change)'), ('duplicate', 'Duplicate consolidated'), ('cleanup', 'Swept: its loop had already ended')], max_length=20),
        ),
        migrations.AddIndex(
            model_name='retrynotice',
            index=models.Index(fields=['session', 'retired_at'], name='ladder_retr_session_3a5e9e_idx'),
        ),
    ]
